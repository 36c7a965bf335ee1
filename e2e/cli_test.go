package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestNamesAreHandles(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	a, b := project(t), project(t)
	id := d.start("--name", "builder", a, "--", "sleep", "100")
	if rec := d.inspect("builder"); rec.ID != id || rec.Name != "builder" {
		t.Errorf("inspect builder = %s %q, want session %s", rec.ID, rec.Name, id)
	}
	d.mustCtl("logs", "builder")
	// A name in use by a live session is refused; the error names it.
	r := d.ctl("start", "--name", "builder", b, "--", "sleep", "100")
	if r.code != 1 || !strings.Contains(r.stderr, `"builder" is in use by live session `+id) {
		t.Errorf("second start with the same name:\n%s", r)
	}
	// A name that cannot be a handle is a usage error, before any request.
	if r := d.ctl("start", "--name", "two words", b, "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--name") {
		t.Errorf("start --name 'two words':\n%s", r)
	}
	// Default names are the directory's, made unique among live sessions.
	c := project(t)
	if err := os.WriteFile(filepath.Join(c, "sessiond.toml"), []byte("[session]\nconcurrent = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first := d.start(c, "--", "sleep", "100")
	second := d.start(c, "--", "sleep", "100")
	base := filepath.Base(c)
	if n1, n2 := d.inspect(first).Name, d.inspect(second).Name; n1 != base || n2 != base+"-2" {
		t.Errorf("default names = %q, %q; want %q, %q", n1, n2, base, base+"-2")
	}
	// Once stopped, the name is free again, and still finds the session.
	d.mustCtl("stop", "builder")
	if rec := d.inspect("builder"); rec.ID != id || rec.State != "ended" {
		t.Errorf("inspect builder after its end = %s %s", rec.ID, rec.State)
	}
	next := d.start("--name", "builder", b, "--", "sleep", "100")
	if rec := d.inspect("builder"); rec.ID != next {
		t.Errorf("builder = %s, want the live one %s", rec.ID, next)
	}
}

func TestRestartChainIsOneRow(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--name", "chain", dir, "--", "sleep", "100")
	r := d.mustCtl("restart", "chain")
	second := strings.Fields(r)[len(strings.Fields(r))-1]
	if !strings.HasPrefix(r, id+" restarted as ") || !validID(second) {
		t.Fatalf("restart printed %q", r)
	}
	third := strings.Fields(d.mustCtl("restart", second))
	last := third[len(third)-1]
	if rec := d.inspect(last); rec.RestartOf != second || rec.Restarts != 2 || rec.Name != "chain" || rec.State != "running" {
		t.Errorf("after two restarts: %+v", rec)
	}
	if old := d.inspect(id); old.State != "ended" || old.EndReason != "interrupted" {
		t.Errorf("the first session = %s/%s, want ended/interrupted", old.State, old.EndReason)
	}
	// One row for the chain, its latest; --chains shows them all.
	rows := strings.Fields(d.mustCtl("ps", "-a", "-q"))
	if len(rows) != 1 || rows[0] != last {
		t.Errorf("ps -a -q = %v, want only %s", rows, last)
	}
	if all := strings.Fields(d.mustCtl("ps", "-a", "-q", "--chains")); len(all) != 3 {
		t.Errorf("ps -a -q --chains = %v, want 3 sessions", all)
	}
	// Restarting an old link of the chain is refused: restart the latest.
	if r := d.ctl("restart", id); r.code != 1 || !strings.Contains(r.stderr, "restarted already") {
		t.Errorf("restart of the chain's first session:\n%s", r)
	}
}

// TestStopEndsARestartChain: a stop of a session that ended and waits out
// its restart policy's backoff, by its id or with stop --all, cancels the
// restart: no successor comes.
func TestStopEndsARestartChain(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	for _, how := range []string{"id", "all"} {
		dir := project(t)
		id := d.start("--restart", "always", "--checkpoint", "", dir, "--", "sh", "-c", "sleep 0.2; exit 1")
		d.waitEnded(id, 10*time.Second)
		if how == "id" {
			d.mustCtl("stop", id)
		} else {
			d.mustCtl("stop", "--all")
		}
		// The restart was due a second after the end.
		sleepUntil(time.Now().Add(2500 * time.Millisecond))
		if all := strings.Fields(d.mustCtl("ps", "-a", "-q", "--chains", "-f", "project="+filepath.Base(dir))); len(all) != 1 {
			t.Errorf("stop (%s) during the restart's backoff: the chain is %v, want the one session", how, all)
		}
	}
}

// TestRestartChainSurvivesDaemonRestart: the chain is the records', so a
// session restarted once is refused a second restart by the next daemon
// too, exactly as by the one that restarted it.
func TestRestartChainSurvivesDaemonRestart(t *testing.T) {
	t.Parallel()
	stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, stateDir, sock)
	dir := project(t)
	a := d.start(dir, "--", "true")
	d.waitEnded(a, 10*time.Second)
	r := strings.Fields(d.mustCtl("restart", a))
	b := r[len(r)-1]
	if !validID(b) {
		t.Fatalf("restart printed %q", r)
	}
	d.waitEnded(b, 10*time.Second)
	before := d.ctl("restart", a)
	if before.code != 1 || !strings.Contains(before.stderr, "restarted already, as "+b) {
		t.Fatalf("second restart of %s before the daemon restart:\n%s", a, before)
	}
	if d.stop() != 0 {
		t.Fatal("sessiond did not stop cleanly")
	}
	d2 := startDaemonAt(t, stateDir, sock)
	after := d2.ctl("restart", a)
	if after.code != before.code || after.stderr != before.stderr {
		t.Errorf("restart of %s after the daemon restart:\n%s\nwant as before it:\n%s", a, after, before)
	}
	if all := strings.Fields(d2.mustCtl("ps", "-a", "-q", "--chains")); len(all) != 2 {
		t.Errorf("ps -a -q --chains = %v, want the 2 sessions of the chain", all)
	}
}

func TestRmAndPrune(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	live := d.start(project(t), "--", "sleep", "100")
	var ended []string
	for range 3 {
		id := d.start(dir, "--", "true")
		d.waitEnded(id, 10*time.Second)
		ended = append(ended, id)
	}
	// A live session is not removed.
	if r := d.ctl("rm", live); r.code != 1 || !strings.Contains(r.stderr, "stop it first") {
		t.Errorf("rm of a live session:\n%s", r)
	}
	// --json: the ids removed, as prune answers them.
	var rm struct{ Removed []string }
	if out := d.mustCtl("--json", "rm", ended[0]); json.Unmarshal([]byte(out), &rm) != nil || len(rm.Removed) != 1 || rm.Removed[0] != ended[0] {
		t.Errorf("rm --json %s: got %q, want {\"removed\":[%q]}", ended[0], out, ended[0])
	}
	if r := d.ctl("inspect", ended[0]); r.code != 1 {
		t.Errorf("inspect after rm:\n%s", r)
	}
	if fileExists(filepath.Join(d.stateDir, "sessions", ended[0])) {
		t.Error("rm left the session's directory in the state dir")
	}
	// prune --older-than keeps recent ends; prune takes them all. The
	// project's own files stay.
	if out := d.mustCtl("prune", "--older-than", "1h"); strings.TrimSpace(out) != "" {
		t.Errorf("prune --older-than 1h removed %q", out)
	}
	out := strings.Fields(d.mustCtl("prune"))
	if len(out) != 2 {
		t.Errorf("prune removed %v, want the 2 ended sessions", out)
	}
	if got := strings.Fields(d.mustCtl("ps", "-a", "-q")); len(got) != 1 || got[0] != live {
		t.Errorf("after prune, ps -a = %v, want only the live session", got)
	}
	if !fileExists(filepath.Join(dir, ".sessiond", "handoff.json")) || !fileExists(filepath.Join(dir, ".sessiond", "progress.md")) {
		t.Error("prune removed the project's .sessiond files")
	}
	// With its sessions' records gone, a project's handoff is still the
	// one in its .sessiond: the last session's.
	var h struct {
		SessionID string `json:"session_id"`
	}
	if out := d.mustCtl("handoff", dir); json.Unmarshal([]byte(out), &h) != nil || h.SessionID != ended[2] {
		t.Errorf("handoff %s after prune: got %q, want the handoff of %s", dir, out, ended[2])
	}
	if r := d.ctl("handoff", project(t)); r.code != 1 || !strings.Contains(r.stderr, "no session has run in") {
		t.Errorf("handoff of a project no session ran in:\n%s", r)
	}
	if r := d.ctl("prune", "--older-than", "soon"); r.code != 2 {
		t.Errorf("prune --older-than soon:\n%s", r)
	}
}

func TestPsFormatFilterAndColour(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	long := "a-command-line-that-goes-on-and-on-well-past-forty-characters"
	d.start("--name", "alpha", project(t), "--", "sh", "-c", "sleep 100 # "+long)
	d.start("--name", "beta", project(t), "--", "sleep", "100")
	ended := d.start("--name", "gamma", project(t), "--", "sh", "-c", "exit 3")
	d.waitEnded(ended, 10*time.Second)

	ids := regexp.MustCompile(`\b[0-9a-z]{8}\b`)
	normalize := func(s string) string { return ids.ReplaceAllString(s, "ID") }
	golden(t, "ps-format-table.txt", normalize(d.mustCtl("ps", "-a", "--format", `table {{.Name}}\t{{.State}}\t{{.Restarts}}`)))
	golden(t, "ps-format-plain.txt", normalize(d.mustCtl("ps", "--filter", "name=al*", "--format", "{{.Name}} {{.State}} pid={{if ne .PID \"-\"}}set{{end}}")))
	if got := d.mustCtl("ps", "-a", "--filter", "state=ended", "--format", "{{.Name}} {{.Reason}}"); got != "gamma error\n" {
		t.Errorf("ps --filter state=ended = %q", got)
	}
	if r := d.ctl("ps", "--format", "{{.Nope}}"); r.code != 2 || !strings.Contains(r.stderr, "--format") {
		t.Errorf("ps with an unknown field:\n%s", r)
	}
	// Long commands are cut unless --no-trunc.
	if out := d.mustCtl("ps", "--filter", "name=alpha"); strings.Contains(out, long) || !strings.Contains(out, "…") {
		t.Errorf("ps did not cut a long command:\n%s", out)
	}
	if out := d.mustCtl("ps", "--no-trunc", "--filter", "name=alpha"); !strings.Contains(out, long) {
		t.Errorf("ps --no-trunc cut the command:\n%s", out)
	}
	// The table has CPU and memory of each live tree.
	if row := d.mustCtl("ps", "--filter", "name=beta"); !regexp.MustCompile(`running +\d+ +\d+\.\d +\d+(\.\d)?[KMG] `).MatchString(row) {
		t.Errorf("ps:\n%s\nwant CPU %% and MEM after the pid", row)
	}
	if got := d.mustCtl("ps", "--filter", "name=beta", "--format", "{{.CPU}} {{.Mem}}"); !regexp.MustCompile(`^\d+\.\d \d+(\.\d)?[KMG]\n$`).MatchString(got) {
		t.Errorf("ps --format '{{.CPU}} {{.Mem}}' = %q", got)
	}

	// Colour on a terminal only; --no-color, NO_COLOR and a pipe turn it off.
	onTTY := func(env []string, args ...string) string {
		cmd := exec.Command("script", "-qec", strings.Join(append([]string{sessionctlBin, "--socket", d.sock}, args...), " "), "/dev/null")
		cmd.Env = append(cleanEnv(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("script: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := onTTY(nil, "ps", "-a"); !strings.Contains(out, "\x1b[32mrunning") || !strings.Contains(out, "\x1b[31mended (error)") {
		t.Errorf("ps on a terminal has no colour: %q", out)
	}
	for name, out := range map[string]string{
		"--no-color": onTTY(nil, "--no-color", "ps", "-a"),
		"NO_COLOR":   onTTY([]string{"NO_COLOR=1"}, "ps", "-a"),
		"a pipe":     d.mustCtl("ps", "-a"),
	} {
		if strings.Contains(out, "\x1b[") {
			t.Errorf("colour with %s: %q", name, out)
		}
	}
}

// TestStartAndStopBatches: several projects, or --count sessions of one
// spec, start in one call; one that cannot start is said and the others
// run; stop --all stops them in one call, every handoff on disk.
func TestStartAndStopBatches(t *testing.T) {
	d := startDaemon(t)
	dirs := []string{project(t), project(t), project(t)}
	out := d.mustCtl(append(append([]string{"start", "-q", "--checkpoint", ""}, dirs...), "--", "sleep", "300")...)
	ids := strings.Fields(out)
	if len(ids) != 3 {
		t.Fatalf("start of three projects printed %q, want three ids", out)
	}
	for i, id := range ids {
		if rec := d.inspect(id); rec.ProjectDir != dirs[i] || rec.State != "running" {
			t.Errorf("session %s: %s in %s, want running in %s", id, rec.State, rec.ProjectDir, dirs[i])
		}
	}
	// --count in a project without concurrent = true: one runs, the rest are refused.
	one := project(t)
	r := d.ctl("start", "-q", "--count", "3", "--checkpoint", "", one, "--", "sleep", "300")
	if r.code != 1 || len(strings.Fields(r.stdout)) != 1 || strings.Count(r.stderr, "already has a live session") != 2 {
		t.Errorf("--count 3 without concurrent: %s", r)
	}
	many := project(t)
	writeFile(t, filepath.Join(many, "sessiond.toml"), "[session]\nconcurrent = true\ncheckpoint = \"\"\n")
	r = d.ctl("start", "-q", "--count", "4", many, "--", "sleep", "300")
	if r.code != 0 || len(strings.Fields(r.stdout)) != 4 {
		t.Errorf("--count 4 with concurrent = true: %s", r)
	}
	if r := d.ctl("start", dirs[0], "sleep", "1"); r.code != 2 || !strings.Contains(r.stderr, "directory sleep does not exist (a command goes after --)") {
		t.Errorf("a command without --: %s", r)
	}
	if r := d.ctl("start", "--wait", dirs[0], dirs[1], "--", "true"); r.code != 2 {
		t.Errorf("--wait with a batch: %s", r)
	}
	live := d.list(false)
	if len(live) != 8 {
		t.Fatalf("%d live sessions, want 8", len(live))
	}
	// The API's brief view is the record's end in a few fields; an
	// unknown view is refused before anything stops.
	for _, body := range []string{`{"all":true,"grace":"bogus"}`, `{"ids":["zzzz"],"grace":"-5s"}`} {
		if resp, out := curl(t, d.sock, "POST", "/v1/sessions/stop", []byte(body)); resp.StatusCode != 400 || !strings.Contains(string(out), "grace") {
			t.Errorf("a batch stop with a bad grace %s: %d %s, want 400 naming grace", body, resp.StatusCode, out)
		}
	}
	if resp, body := curl(t, d.sock, "POST", "/v1/sessions/stop?view=short", []byte(`{"all":true}`)); resp.StatusCode != 400 || !strings.Contains(string(body), `view \"short\"`) {
		t.Errorf("stop with view short: %d %s", resp.StatusCode, body)
	}
	resp, body := curl(t, d.sock, "POST", "/v1/sessions/stop?view=brief", []byte(`{"ids":["`+ids[0]+`"],"grace":"5s"}`))
	var briefs []map[string]json.RawMessage
	if err := json.Unmarshal(body, &briefs); resp.StatusCode != 200 || err != nil || len(briefs) != 1 || briefs[0]["session"] != nil || briefs[0]["brief"] == nil {
		t.Fatalf("stop with view brief: %d %s (%v)", resp.StatusCode, body, err)
	}
	var brief struct {
		ID, State, EndReason, Signal, HandoffPath string
	}
	_ = json.Unmarshal(briefs[0]["brief"], &struct {
		ID          *string `json:"id"`
		State       *string `json:"state"`
		EndReason   *string `json:"end_reason"`
		Signal      *string `json:"signal"`
		HandoffPath *string `json:"handoff_path"`
	}{&brief.ID, &brief.State, &brief.EndReason, &brief.Signal, &brief.HandoffPath})
	if rec := d.inspect(ids[0]); brief.ID != rec.ID || brief.State != "ended" || brief.EndReason != rec.EndReason || brief.Signal != rec.Signal || brief.HandoffPath == "" {
		t.Errorf("brief %+v, record %s %s %s %s", brief, rec.ID, rec.State, rec.EndReason, rec.Signal)
	}
	out = d.mustCtl("stop", "--all", "--grace", "5s")
	if n := strings.Count(out, "ended: interrupted"); n != 7 {
		t.Errorf("stop --all: %d ends reported, want 7:\n%s", n, out)
	}
	for _, rec := range live {
		if _, err := os.Stat(filepath.Join(d.stateDir, "sessions", rec.ID, "handoff.json")); err != nil {
			t.Errorf("session %s: no handoff after stop --all: %v", rec.ID, err)
		}
		if rec.ID == ids[0] {
			continue
		}
		// Each end reads as it did from the whole record.
		end := d.inspect(rec.ID)
		want := fmt.Sprintf("%s ended: interrupted (%s)\n  handoff: %s\n", end.ID, end.Signal, filepath.Join(rec.ProjectDir, ".sessiond", "handoff.json"))
		if !strings.Contains(out, want) {
			t.Errorf("stop --all does not say %q:\n%s", want, out)
		}
	}
	if n := len(d.list(false)); n != 0 {
		t.Errorf("%d sessions live after stop --all", n)
	}
}

// TestArgumentsStayOutOfLogAndEvents: an agent's arguments are its prompt;
// the daemon's log (but at debug level) and the events that reach
// notification sinks name the executable and count its arguments, and the
// prompt appears in neither.
func TestArgumentsStayOutOfLogAndEvents(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	const secret = "the-deploy-token-is-s3cr3t"
	id := d.start("--checkpoint", "", dir, "--", "sh", "-c", "sleep 30 # "+secret)
	d.mustCtl("stop", id)
	d.waitEnded(id, 15*time.Second)
	events := d.mustCtl("events")
	if strings.Contains(events, secret) {
		t.Errorf("events carry the argument:\n%s", events)
	}
	if !strings.Contains(events, "started sh (2 arguments) in "+dir) {
		t.Errorf("no started event naming the executable:\n%s", events)
	}
	log, err := os.ReadFile(d.logPath)
	if err != nil {
		t.Fatal(err)
	}
	// The test daemons log at debug level, where the whole argv is; every
	// other level leaves it out.
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, secret) && !strings.Contains(line, `"level":"debug"`) {
			t.Errorf("the daemon log has the argument above debug level: %s", line)
		}
	}
	if !strings.Contains(string(log), `"args": 2`) && !strings.Contains(string(log), `"args":2`) {
		t.Errorf("the daemon log does not count the arguments:\n%s", log)
	}
}

// TestInterruptedWaitLeavesTheSession: sessionctl catches SIGINT only once
// a command has run a while (quick commands never pay for a signal
// watcher), and a command that waits, interrupted then, says so and
// leaves the session running.
func TestInterruptedWaitLeavesTheSession(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	var out, errb syncBuffer
	cmd := exec.Command(sessionctlBin, "--socket", d.sock, "start", "--wait", "--name", "waited", dir, "--", "sleep", "100")
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	waitFor(t, 10*time.Second, "the waited session to run", func() (bool, string) {
		r := d.ctl("inspect", "--json", "waited")
		return r.code == 0 && strings.Contains(r.stdout, `"state": "running"`), r.String()
	})
	// Well past the 50 ms before which the signal's default action ends
	// sessionctl (cmd/sessionctl/signals.go).
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if code := exitCode(waitErr); code != 130 || !strings.Contains(errb.String(), "interrupted; the session goes on") {
			t.Errorf("start --wait after SIGINT: exit %d, stderr %q; want 130 and that the session goes on", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("start --wait did not end within 10s of SIGINT")
	}
	if rec := d.inspect("waited"); rec.State != "running" {
		t.Errorf("the session after its waiter was interrupted: %s, want running", rec.State)
	}
}

// TestJSONOutputEscapesC1: a C1 control a session's command, project or
// files carry (U+009D, an OSC to some terminals) is in --json output as a
// \u escape, never raw, whose value reads back the same.
func TestJSONOutputEscapesC1(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	arg := "x\u009d52;c;SGk=\u009c\u009b6n"
	id := d.start("--checkpoint", "", dir, "--", "sh", "-c", "sleep 60", arg)
	for _, args := range [][]string{{"inspect", id}, {"--json", "ps"}, {"--json", "ps", "-f", "state=running"}, {"--json", "events"}} {
		out := d.mustCtl(args...)
		if strings.Contains(out, "\u009d") || strings.Contains(out, "\u009b") {
			t.Errorf("%v prints a raw C1 control", args)
		}
		if !strings.Contains(out, `\u009d52;c;SGk=\u009c\u009b6n`) {
			t.Errorf("%v does not carry the argument escaped:\n%s", args, out)
		}
	}
	var rec struct {
		Command []string `json:"command"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("inspect", id)), &rec); err != nil || len(rec.Command) != 4 || rec.Command[3] != arg {
		t.Errorf("the escaped record reads back as %q (%v), want the argument %q", rec.Command, err, arg)
	}
	d.mustCtl("stop", id)
}

// TestCorruptContextsFile: a contexts file that is not JSON stops the
// commands that would go to the current context (it may be another
// host's), saying how to repair; the context commands set it aside and
// start anew, saying so.
func TestCorruptContextsFile(t *testing.T) {
	t.Parallel()
	cfgHome := t.TempDir()
	path := filepath.Join(cfgHome, "sessiond", "contexts.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"current": "h1", "contexts": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "XDG_CONFIG_HOME="+cfgHome, "XDG_RUNTIME_DIR="+t.TempDir(), "HOME="+t.TempDir())
	if r := execute(t, env, sessionctlBin, "ps"); r.code != 1 || !strings.Contains(r.stderr, "context ls sets it aside") {
		t.Errorf("ps with a corrupt contexts file: %s", r)
	}
	r := execute(t, env, sessionctlBin, "context", "ls")
	if r.code != 0 || !strings.Contains(r.stderr, "was not JSON") || !strings.Contains(r.stdout, "default") {
		t.Errorf("context ls with a corrupt contexts file: %s", r)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 || fileExists(path) {
		t.Errorf("the corrupt file is not set aside: %v, still there: %v", aside, fileExists(path))
	}
	if r := execute(t, env, sessionctlBin, "ps"); r.code != 3 {
		t.Errorf("ps after the repair, with no daemon: %s, want exit 3", r)
	}
}
