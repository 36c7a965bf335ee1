package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
)

// TestShortTimeoutsNeedNoWarnBefore: --timeout 5m, or timeout = "10m" in
// sessiond.toml, starts as typed; the warning comes a quarter ahead.
func TestShortTimeoutsNeedNoWarnBefore(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--timeout", "5m", dir, "--", "sleep", "300")
	rec := d.inspect(id)
	if got := rec.Deadline.Sub(rec.WarnAt); got != 75*time.Second {
		t.Errorf("--timeout 5m warns %v ahead, want 1m15s", got)
	}
	d.mustCtl("stop", id)

	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\ntimeout = \"10m\"\n")
	id = d.start(dir, "--", "sleep", "300")
	rec = d.inspect(id)
	if got := rec.Deadline.Sub(rec.WarnAt); got != 150*time.Second {
		t.Errorf("timeout = \"10m\" warns %v ahead, want 2m30s", got)
	}
	d.mustCtl("stop", id)

	// One given that does not fit says which flag to change.
	r := d.ctl("start", "--timeout", "5m", "--warn-before", "10m", dir, "--", "sleep", "300")
	if r.code == 0 || !strings.Contains(r.stderr, "--warn-before") {
		t.Errorf("a --warn-before longer than the timeout:\n%s", r)
	}
}

// TestTerminalStopIsAHangup: an interactive shell on a terminal ignores
// SIGTERM; its stop is the terminal going away (SIGHUP), at once, not
// after the whole grace.
func TestTerminalStopIsAHangup(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--tty", "--checkpoint", "", dir, "--", "bash", "-i")
	waitFor(t, 10*time.Second, "the shell's prompt", func() (bool, string) {
		s := d.mustCtl("screen", id)
		return strings.Contains(s, "$") || strings.Contains(s, "#"), s
	})
	t0 := time.Now()
	out := d.mustCtl("stop", id)
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("stopping bash -i on a terminal took %v, want it at the hangup", took)
	}
	if !strings.Contains(out, "interrupted (SIGHUP)") {
		t.Errorf("stop: %q, want it ended by SIGHUP", out)
	}
	var spec struct {
		Spec struct {
			StopSignal string `json:"stop_signal"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("inspect", id)), &spec); err != nil || spec.Spec.StopSignal != "SIGHUP" {
		t.Errorf("inspect: stop_signal %q (%v), want SIGHUP", spec.Spec.StopSignal, err)
	}
	// A stop signal given is kept, terminal or not.
	id = d.start("--tty", "--checkpoint", "", "--stop-signal", "INT", dir, "--", "sleep", "300")
	if out := d.mustCtl("stop", id); !strings.Contains(out, "SIGINT") {
		t.Errorf("stop with --stop-signal INT: %q", out)
	}
}

// waitingLine is what a waiting stop says, 2 s into a 4 s grace (a second
// either way on a loaded machine).
var waitingLine = regexp.MustCompile(`SIGTERM sent [1-3]s ago; SIGKILL in [1-3]s`)

// TestAWaitingStopSaysWhatItWaitsFor: a stop that waits for a command
// that ignores its stop signal says so, with the signal and when SIGKILL
// comes.
func TestAWaitingStopSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--checkpoint", "", "--stop-grace", "4s", dir, "--", "sh", "-c", "trap '' TERM; touch trapped; while :; do sleep 1; done")
	waitFile(t, filepath.Join(dir, "trapped"), 10*time.Second)
	r := d.ctl("stop", id)
	if r.code != 0 {
		t.Fatalf("stop: %s", r)
	}
	if !strings.Contains(r.stderr, "waiting for "+id) || !waitingLine.MatchString(r.stderr) {
		t.Errorf("a waiting stop did not say what it waits for:\n%s", r)
	}
	// A quick stop says nothing.
	id = d.start("--checkpoint", "", dir, "--", "sleep", "300")
	if r := d.ctl("stop", id); r.code != 0 || r.stderr != "" {
		t.Errorf("a quick stop:\n%s", r)
	}
}

// TestTerminalLogsKeepTheirSpaces runs the real, interactive Claude Code
// on a terminal: it places words by column, and sessionctl logs reads as
// its screen does, "Welcome to Claude Code", not "WelcometoClaudeCode".
func TestTerminalLogsKeepTheirSpaces(t *testing.T) {
	t.Parallel()
	claude := agenttest.RealClaude(t)
	d := startDaemon(t)
	dir := project(t)
	r := runCtl(t, d.sock, []string{"HOME=" + t.TempDir(), "ANTHROPIC_API_KEY=sk-ant-test-dummy", "ANTHROPIC_BASE_URL=http://127.0.0.1:9",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}, "start", "-q", "--checkpoint", "", dir, "--", claude)
	if r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	id := strings.TrimSpace(r.stdout)
	waitFor(t, 60*time.Second, "Claude Code's welcome in the log", func() (bool, string) {
		out := d.mustCtl("logs", id)
		return strings.Contains(out, "Welcome to Claude Code v"+agenttest.RealClaudeVersion), out
	})
	if out := d.mustCtl("logs", id); strings.Contains(out, "WelcometoClaude") {
		t.Errorf("the log lost its spaces:\n%s", out)
	}
	d.mustCtl("stop", id)
}

// TestReportsLandWhereUsersLook: the agent's --summary and --progress are
// in handoff.json; a person resolves the agent's blocker from outside,
// between sessions and during one, and the next context.md and state
// show it resolved.
func TestReportsLandWhereUsersLook(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	env := "PATH=" + filepath.Dir(sessionctlBin) + ":/usr/bin:/bin"
	r := runCtl(t, d.sock, []string{env}, "start", "-q", "--checkpoint", "", dir, "--", "sh", "-c",
		`sessionctl report --summary "Wired the login form" --progress 40 --blocker "Which database, Postgres or SQLite?" && echo reported`)
	if r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	id := strings.TrimSpace(r.stdout)
	d.waitEnded(id, 20*time.Second)
	var h struct {
		Summary     string   `json:"summary"`
		ProgressPct *float64 `json:"progress_pct"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("--json", "handoff", id)), &h); err != nil || h.Summary != "Wired the login form" || h.ProgressPct == nil || *h.ProgressPct != 40 {
		t.Errorf("handoff summary %q progress %v (%v), want the report's", h.Summary, h.ProgressPct, err)
	}
	if st := d.mustCtl("state", dir); !strings.Contains(st, "Which database") {
		t.Fatalf("the blocker is not in the state:\n%s", st)
	}

	// Between sessions: the state changes, and the next session's
	// context has it resolved.
	if r := d.ctl("report", "--summary", "x", "--resolve", "1", dir); r.code != 2 || !strings.Contains(r.stderr, "only --resolve") {
		t.Errorf("a summary from outside:\n%s", r)
	}
	if r := d.ctl("report", "--resolve", "7", dir); r.code == 0 || !strings.Contains(r.stderr, "no open blocker #7") {
		t.Errorf("resolving a blocker that is not open:\n%s", r)
	}
	out := d.mustCtl("report", "--resolve", "1", dir)
	if !strings.Contains(out, "Resolved #1: Which database") || !strings.Contains(out, "session state") {
		t.Errorf("report --resolve from outside: %q", out)
	}
	if st := d.mustCtl("state", dir); strings.Contains(st, "Which database") {
		t.Errorf("the state still shows the resolved blocker:\n%s", st)
	}
	r = runCtl(t, d.sock, []string{env}, "start", "-q", "--checkpoint", "", dir, "--", "sh", "-c",
		`cat "$SESSIOND_CONTEXT_FILE"; sessionctl report --blocker "Deploy on Friday?" && echo reported; exec sleep 300`)
	if r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	id = strings.TrimSpace(r.stdout)
	var ctx string
	waitFor(t, 10*time.Second, "the context and the new blocker", func() (bool, string) {
		ctx = d.mustCtl("logs", id)
		return strings.Contains(ctx, "reported"), ctx
	})
	if strings.Contains(ctx, "- Blocked: Which database") || !strings.Contains(ctx, "(#1) (resolved since)") || !strings.Contains(ctx, "Wired the login form") {
		t.Errorf("the next context.md still has the resolved blocker, or lacks the summary:\n%s", ctx)
	}

	// During a session, from outside it: the live session is told, and
	// its end writes it.
	out = d.mustCtl("report", "--resolve", "all", dir)
	if !strings.Contains(out, "Resolved #2: Deploy on Friday?") || !strings.Contains(out, "told the live session "+id) {
		t.Errorf("report --resolve all during a session: %q", out)
	}
	d.mustCtl("stop", id)
	if st := d.mustCtl("state", dir); strings.Contains(st, "Deploy on Friday") {
		t.Errorf("the session's end brought the resolved blocker back:\n%s", st)
	}
}

// TestAnEndNobodySaw: a session's command ends (exit 0) while the daemon
// is down. The next daemon cannot know its exit status, and says so; its
// end time is its last sign of life (its log's last write), not the
// restart that found it.
func TestAnEndNobodySaw(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	sock := newSocketPath(t)
	d := startDaemonAt(t, state, sock)
	dir := project(t)
	id := d.start("--checkpoint", "", dir, "--", "sh", "-c", "sleep 2; echo done")
	d.kill9()
	time.Sleep(5 * time.Second)
	d = startDaemonAt(t, state, sock)
	rec := d.waitEnded(id, 15*time.Second)
	if rec.EndReason != "crashed" || rec.EndedAt == nil {
		t.Fatalf("end %q at %v, want crashed (its end unobserved)", rec.EndReason, rec.EndedAt)
	}
	if ran := rec.EndedAt.Sub(rec.StartedAt); ran < 1500*time.Millisecond || ran > 4*time.Second {
		t.Errorf("recorded as running %v, want about 2s (its log's last write), not until the restart", ran)
	}
	if ps := d.mustCtl("ps", "--all"); !strings.Contains(ps, "ended (unobserved)") || strings.Contains(ps, "crashed") {
		t.Errorf("ps:\n%s", ps)
	}
	h := d.mustCtl("--json", "handoff", id)
	for _, want := range []string{"it ended while the daemon was down", "exit status unknown"} {
		if !strings.Contains(h, want) {
			t.Errorf("the handoff does not say %q:\n%s", want, h)
		}
	}
	if st := d.mustCtl("state", dir); !strings.Contains(st, "unobserved (exit status unknown) after 2s") {
		t.Errorf("state:\n%s", st)
	}
}

// TestConversationIDStays: a hook that names another conversation, one
// with no transcript (a SessionEnd of an agent stopped before its first
// turn), does not replace the id sessiond gave the agent; the handoff and
// a resume point at the real one.
func TestConversationIDStays(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	a := newAgentSetup(t, "prompt=go on,wait=end,exit")
	id := d.start(append(a.flags, dir, "--", "claude", "-p", "go on")...)
	rec := d.waitAgent(id, "working")
	chosen := rec.Agent.ConversationID
	other := "0b6e3c2a-58a1-4c55-9d5e-2f4a9c1d7e11"
	payload := fmt.Sprintf(`{"session_id":%q,"transcript_path":%q,"cwd":%q,"hook_event_name":"SessionEnd","reason":"other"}`,
		other, filepath.Join(a.home, ".claude", "projects", "x", other+".jsonl"), dir)
	cmd := exec.Command(sessionctlBin, "--socket", d.sock, "hook", "claude-code")
	cmd.Env = append(cleanEnv(), "SESSIOND_SESSION_ID="+id)
	cmd.Stdin = strings.NewReader(payload)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sessionctl hook: %v\n%s", err, out)
	}
	if got := d.agentRecord(id).Agent.ConversationID; got != chosen {
		t.Errorf("conversation id %s after a hook naming %s (no transcript), want %s kept", got, other, chosen)
	}
	a.cue(t, "end")
	d.waitEnded(id, 20*time.Second)
	if h := d.mustCtl("--json", "handoff", id); !strings.Contains(h, chosen) || strings.Contains(h, `"conversation_id": "`+other) {
		t.Errorf("the handoff does not point at %s:\n%s", chosen, h)
	}
}

// TestGoInstalledSessionctl: a sessionctl built alone, as `go install
// github.com/sessiond/sessiond/cmd/sessionctl@latest` builds it, with no
// helper binaries beside it: its dashboard runs.
func TestGoInstalledSessionctl(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "sessionctl")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sessionctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sessionctl: %v\n%s", err, out)
	}
	d := startDaemon(t)
	d.start("--name", "installed", project(t), "--", "sleep", "600")
	x := newTmux(t)
	w := x.shell("ui", 100, 30)
	x.typeLine(w, bin+" --socket "+d.sock+" ui; echo ui exited $?")
	x.waitPane(w, "installed", "running")
	x.run("send-keys", "-t", w, "q")
	x.waitPane(w, "ui exited 0")
}

// TestNotifyKnowsALiveSessionsOnWarning: notify rules and notify test go
// by a live session's own --on-warning, as its warning will.
func TestNotifyKnowsALiveSessionsOnWarning(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	mark := filepath.Join(t.TempDir(), "warned")
	id := d.start("--checkpoint", "", "--env", "MARK_VALUE=from-the-session", "--on-warning", "echo $MARK_VALUE > "+mark, dir, "--", "sleep", "600")
	if r := d.mustCtl("notify", "rules", "--dir", dir); !strings.Contains(r, "on_warning") || !strings.Contains(r, mark) {
		t.Errorf("notify rules does not show the session's --on-warning:\n%s", r)
	}
	r := d.ctl("notify", "test", "--dir", dir, "on_warning")
	if r.code != 0 {
		t.Fatalf("notify test on_warning:\n%s", r)
	}
	if got := strings.TrimSpace(string(waitLine(t, mark, 5*time.Second))); got != "from-the-session" {
		t.Errorf("the hook ran with MARK_VALUE %q, want the live session's environment", got)
	}
	d.mustCtl("stop", id)
}

// TestCommandsDefaultToTheProjectHere: in a project directory, logs,
// checkpoint, stop and handoff need no argument, as state and start do;
// the traps of ps --format and extend -5m say what is wrong.
func TestCommandsDefaultToTheProjectHere(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	id := d.start("--checkpoint", "", dir, "--", "sh", "-c", "echo hello-here; exec sleep 300")
	here := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(sessionctlBin, append([]string{"--socket", d.sock}, args...)...)
		cmd.Dir, cmd.Env = dir, cleanEnv()
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return result{args: args, stdout: out.String(), stderr: errb.String(), code: exitCode(err)}
	}
	waitFor(t, 10*time.Second, "logs in the project", func() (bool, string) {
		r := here("logs")
		return r.code == 0 && strings.Contains(r.stdout, "hello-here"), r.String()
	})
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	if r := here("checkpoint"); r.code != 0 || !strings.Contains(r.stdout, "checkpoint") {
		t.Errorf("checkpoint with no argument:\n%s", r)
	}
	if r := here("stop"); r.code != 0 || !strings.Contains(r.stdout, id+" ended") {
		t.Errorf("stop with no argument:\n%s", r)
	}
	if r := here("handoff"); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Errorf("handoff with no argument:\n%s", r)
	}
	if r := here("ps", "--format", "{{.Nope}}"); r.code != 2 || !strings.Contains(r.stderr, "there is no field .Nope; the fields are .ID") || strings.Contains(r.stderr, "main.") {
		t.Errorf("ps --format with a field that is none:\n%s", r)
	}
	if r := here("extend", id, "-5m"); r.code != 2 || !strings.Contains(r.stderr, "a deadline only moves later") {
		t.Errorf("extend -5m:\n%s", r)
	}
}

// TestDashboardAttachLeavesLines: attach from the dashboard, detach, quit:
// the shell's prompt comes on a line of its own, below the attached
// screen, as after sessionctl attach alone.
func TestDashboardAttachLeavesLines(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	id := d.start("--tty", "--checkpoint", "", "--env", "PS1=inner$ ", project(t), "--", "bash", "--norc", "--noprofile", "-i")
	d.waitScreen(id, "inner$")
	x := newTmux(t)
	w := x.shell("ui", 100, 30)
	x.typeLine(w, sessionctlBin+" --socket "+d.sock+" ui")
	x.waitPane(w, id, "running")
	x.pressUntil(w, "a", "inner$")
	x.typeLine(w, "echo from-inside")
	x.waitPane(w, "from-inside")
	x.run("send-keys", "-t", w, "C-]")
	x.waitPane(w, "[live 1]")
	x.run("send-keys", "-t", w, "q")
	var lines []string
	waitFor(t, 10*time.Second, "the shell's prompt after the dashboard", func() (bool, string) {
		lines = lines[:0]
		for _, l := range strings.Split(x.pane(w), "\n") {
			if strings.TrimSpace(l) != "" {
				lines = append(lines, strings.TrimRight(l, " "))
			}
		}
		return len(lines) > 0 && strings.HasSuffix(lines[len(lines)-1], "tmux$"), strings.Join(lines, "\n")
	})
	if last := lines[len(lines)-1]; last != "tmux$" {
		t.Errorf("the prompt shares its line with the attached screen: %q\n%s", last, strings.Join(lines, "\n"))
	}
}
