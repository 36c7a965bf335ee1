package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
)

// limitRecord is what a record says of its agent's limit and its queue.
type limitRecord struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	EndReason string    `json:"end_reason"`
	RestartOf string    `json:"restart_of"`
	Deadline  time.Time `json:"deadline"`
	StartedAt time.Time `json:"started_at"`
	Pool      string    `json:"pool"`
	Agent     *struct {
		State          string `json:"state"`
		ConversationID string `json:"conversation_id"`
		ResumedFrom    string `json:"resumed_from"`
		Account        string `json:"account"`
		Limit          *struct {
			Class         string    `json:"class"`
			ResetsAt      time.Time `json:"resets_at"`
			Continue      string    `json:"continue"`
			ContinueAt    time.Time `json:"continue_at"`
			PausedSeconds int64     `json:"paused_seconds"`
			Source        string    `json:"source"`
		} `json:"limit"`
	} `json:"agent"`
	Queue *struct {
		Place     int       `json:"place"`
		Pool      string    `json:"pool"`
		Reason    string    `json:"reason"`
		NotBefore time.Time `json:"not_before"`
	} `json:"queue"`
	Warning *struct {
		Reason string `json:"reason"`
	} `json:"warning"`
}

func (d *daemon) limitRecord(id string) limitRecord {
	d.t.Helper()
	var rec limitRecord
	out := d.mustCtl("inspect", id)
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		d.t.Fatalf("inspect %s: %v\n%s", id, err, out)
	}
	return rec
}

// successor waits for the session that continues id (restart_of) and
// returns its id.
func (d *daemon) successor(id string, timeout time.Duration) string {
	d.t.Helper()
	var next string
	waitFor(d.t, timeout, "the session that continues "+id, func() (bool, string) {
		for _, r := range d.list(true) {
			if r.RestartOf == id {
				next = r.ID
				return true, ""
			}
		}
		return false, "none yet; " + id + " is " + d.inspect(id).State
	})
	return next
}

// TestLimitClaudeWaitResumes: the Claude Code stand-in's turn fails at its
// usage limit (StopFailure rate_limit, the reset 30 s ahead) and it exits.
// The session ends limit with a handoff that says when it goes on; its
// continuation is queued with the conversation, shown limited (quota,
// resets HH:MM:SS) in ps, its deadline moved by the wait; a notification
// goes out; at the reset it runs with --resume of the same conversation.
func TestLimitClaudeWaitResumes(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	hook := filepath.Join(t.TempDir(), "limited.out")
	writeFile(t, filepath.Join(dir, "sessiond.toml"), `[session]
limit_jitter = "1s"

[[notify]]
on = ["agent_limited"]
command = ["sh", "-c", "cat > `+hook+`"]
`)
	a := newAgentSetup(t, "prompt,tool,limit=quota:30,exit=1;prompt,stop,exit")
	first := d.start(append(a.flags, "--timeout", "1h", dir, "--", "claude", "-p", "build it")...)
	// The deadline a start gives (the limit may have come already).
	startedDeadline := d.limitRecord(first).StartedAt.Add(time.Hour)
	end := d.waitEnded(first, 20*time.Second)
	if end.EndReason != "limit" {
		t.Fatalf("the session ended %q, want limit", end.EndReason)
	}
	rec := d.limitRecord(first)
	lim := rec.Agent.Limit
	if lim == nil || lim.Class != "quota" || lim.Continue != "resume" || lim.ResetsAt.IsZero() {
		t.Fatalf("the agent's limit: %+v", lim)
	}
	if wait := time.Until(lim.ResetsAt); wait < 15*time.Second || wait > 31*time.Second {
		t.Errorf("resets in %s, want about 30s", wait)
	}
	if moved := rec.Deadline.Sub(startedDeadline); moved < 25*time.Second || moved > 35*time.Second {
		t.Errorf("the deadline moved by %s, want by the wait (about 30s)", moved)
	}
	handoff, err := os.ReadFile(filepath.Join(dir, ".sessiond", "handoff.json"))
	if err != nil || !strings.Contains(string(handoff), "usage limit (quota") || !strings.Contains(string(handoff), "resumes its conversation at") {
		t.Errorf("the handoff does not say when the work goes on (%v):\n%s", err, handoff)
	}
	waitFor(t, 10*time.Second, "the agent_limited notification", func() (bool, string) {
		b, _ := os.ReadFile(hook)
		return strings.Contains(string(b), "agent_limited"), string(b)
	})

	next := d.successor(first, 10*time.Second)
	q := d.limitRecord(next)
	if q.State != "queued" || q.Queue == nil || q.Queue.Reason != "limit" || !q.Deadline.Equal(rec.Deadline) {
		t.Errorf("the continuation: state %s queue %+v deadline %s, want queued for the limit with deadline %s", q.State, q.Queue, q.Deadline, rec.Deadline)
	}
	ps := d.mustCtl("ps")
	if !regexp.MustCompile(`queued #1·limited \(quota, resets \d\d:\d\d:\d\d\)`).MatchString(ps) {
		t.Errorf("ps does not show the session limited:\n%s", ps)
	}
	if strings.Contains(ps, first) {
		t.Errorf("ps shows the ended session beside its continuation:\n%s", ps)
	}

	// Two more sessions of the account, started while it is limited: held
	// by the account, they go on after the reset one at a time with the
	// continuation, at least 5 s apart, not in one burst.
	var held []string
	for i := range 2 {
		other := project(t)
		held = append(held, d.start(append(a.flags, "--env", "FAKEAGENT_SCRIPT=prompt,stop,exit",
			"--env", "FAKEAGENT_LOG="+filepath.Join(t.TempDir(), fmt.Sprint("held", i, ".log")), other, "--", "claude", "-p", "more")...))
	}
	for _, id := range held {
		if st := d.limitRecord(id).State; st != "queued" {
			t.Errorf("a session of the limited account is %s, want queued", st)
		}
	}

	done := d.waitEnded(next, 50*time.Second)
	if done.EndReason != "complete" {
		t.Errorf("the continuation ended %q, want complete", done.EndReason)
	}
	var resumed []time.Time
	for _, id := range append([]string{next}, held...) {
		d.waitEnded(id, 50*time.Second)
		resumed = append(resumed, d.limitRecord(id).StartedAt)
	}
	slices.SortFunc(resumed, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(resumed); i++ {
		if gap := resumed[i].Sub(resumed[i-1]); gap < 4900*time.Millisecond {
			t.Errorf("after the reset the account's sessions went on %s apart, want 5s at least: %v", gap, resumed)
		}
	}
	cont := d.limitRecord(next)
	if cont.StartedAt.Before(lim.ResetsAt) {
		t.Errorf("the continuation started at %s, before the reset %s", cont.StartedAt, lim.ResetsAt)
	}
	if cont.Agent.ConversationID != rec.Agent.ConversationID || cont.Agent.ResumedFrom != rec.Agent.ConversationID {
		t.Errorf("the continuation runs conversation %q (resumed from %q), want %s", cont.Agent.ConversationID, cont.Agent.ResumedFrom, rec.Agent.ConversationID)
	}
	starts := agenttest.Find(agenttest.ReadLog(t, a.log), "start")
	if len(starts) != 2 || !slices.Contains(starts[1].Argv, "--resume") || !slices.Contains(starts[1].Argv, rec.Agent.ConversationID) {
		t.Errorf("the agent's runs: %v, want the second with --resume %s", starts, rec.Agent.ConversationID)
	}
}

// TestLimitStopExec: with on_limit = "stop", sessiond exec ends the session
// at the limit with reason limit, a handoff that says when the work may
// go on, and exit status 75 (EX_TEMPFAIL) for the scheduler to retry.
func TestLimitStopExec(t *testing.T) {
	t.Parallel()
	dir := project(t)
	a := newAgentSetup(t, "prompt,tool,limit=quota:600,hang")
	env := []string{"PATH=" + agenttest.Path(agenttest.Build(t)), "HOME=" + a.home, "FAKEAGENT_DIR=" + a.cues, "FAKEAGENT_LOG=" + a.log, "FAKEAGENT_SCRIPT=prompt,tool,limit=quota:600,hang"}
	r := startExec(t, env, "--on-limit", "stop", "--stop-grace", "2s", dir, "--", "claude", "-p", "build it")
	if code := r.wait(t, 30*time.Second); code != 75 {
		t.Fatalf("sessiond exec exited %d, want 75\nstdout: %s\nstderr: %s", code, r.stdout.String(), r.stderr.String())
	}
	if !strings.Contains(r.stderr.String(), "ended limit") || !strings.Contains(r.stderr.String(), "run again after") {
		t.Errorf("exec's summary does not say the limit and when to run again:\n%s", r.stderr.String())
	}
	var h struct {
		EndReason string   `json:"end_reason"`
		Warnings  []string `json:"warnings"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ".sessiond", "handoff.json"))
	if err != nil || json.Unmarshal(b, &h) != nil {
		t.Fatalf("handoff: %v\n%s", err, b)
	}
	if h.EndReason != "limit" || !strings.Contains(strings.Join(h.Warnings, "\n"), "it may go on after") {
		t.Errorf("handoff end %q warnings %q: want limit and when it may go on", h.EndReason, h.Warnings)
	}
}

// TestLimitCodex: a Codex stand-in whose turn fails at usage_limit_reached
// (resets_in_seconds) and exits is limited, and its conversation goes on
// with codex exec resume at the reset, as Claude's does.
func TestLimitCodex(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\nlimit_jitter = \"1s\"\n")
	a := newAgentSetup(t, "prompt,limit=6,exit=1;prompt,stop,exit")
	first := d.start(append(a.flags, dir, "--", "codex", "exec", "--json", "build it")...)
	if end := d.waitEnded(first, 20*time.Second); end.EndReason != "limit" {
		t.Fatalf("the session ended %q, want limit\n%s", end.EndReason, d.mustCtl("logs", first))
	}
	rec := d.limitRecord(first)
	if l := rec.Agent.Limit; l == nil || l.Class != "quota" || l.Continue != "resume" || time.Until(l.ResetsAt) > 7*time.Second {
		t.Fatalf("the agent's limit: %+v", l)
	}
	if rec.Agent.ConversationID == "" {
		t.Fatal("the conversation of the limited Codex run is not known")
	}
	next := d.successor(first, 10*time.Second)
	if done := d.waitEnded(next, 30*time.Second); done.EndReason != "complete" {
		t.Fatalf("the continuation ended %q", done.EndReason)
	}
	starts := agenttest.Find(agenttest.ReadLog(t, a.log), "start")
	if len(starts) != 2 || !slices.Contains(starts[1].Argv, "resume") || !slices.Contains(starts[1].Argv, rec.Agent.ConversationID) {
		t.Errorf("the agent's runs: %v, want the second to resume %s", starts, rec.Agent.ConversationID)
	}
}

// TestLimitPoolQueue: ten sessions of one pool with max_running = 3 and a
// stagger, all of one account: never more than three run, the rest are
// queued in the order they came and start as slots free; the first hits
// its quota, which holds the account until the reset, after which they go
// on one at a time, at least the stagger and never less than 5 s apart.
func TestLimitPoolQueue(t *testing.T) {
	t.Parallel()
	const stagger = time.Second
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), "[pool.batch]\nmax_running = 3\nstagger = \"1s\"\n")
	dir := project(t)
	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\nconcurrent = true\nlimit_jitter = \"1s\"\n")
	// One account for all: the first one's quota is every session's.
	home := t.TempDir()
	var ids []string
	for i := range 10 {
		script := "prompt,sleep=3500ms,stop,exit"
		if i == 0 {
			script = "prompt,limit=quota:4,exit=1;" + script
		}
		a := newAgentSetup(t, script)
		ids = append(ids, d.start(append(a.flags, "--env", "HOME="+home, "--pool", "batch", dir, "--", "claude", "-p", "job")...))
	}
	// Every session but the first waits: the pool staggers its starts,
	// then its quota holds it.
	var listing struct {
		Pools []struct {
			Name         string    `json:"name"`
			MaxRunning   int       `json:"max_running"`
			Running      int       `json:"running"`
			Queued       int       `json:"queued"`
			LimitedUntil time.Time `json:"limited_until"`
		} `json:"pools"`
		Queued []struct {
			ID    string `json:"id"`
			Queue struct {
				Place int    `json:"place"`
				Pool  string `json:"pool"`
			} `json:"queue"`
		} `json:"queued"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("--json", "queue")), &listing); err != nil {
		t.Fatal(err)
	}
	if len(listing.Queued) < 8 {
		t.Fatalf("%d sessions queued right after ten starts, want at least 8: %+v", len(listing.Queued), listing.Queued)
	}
	last := -1
	for i, q := range listing.Queued {
		if q.Queue.Place != i+1 || q.Queue.Pool != "batch" {
			t.Errorf("queue entry %d: %+v", i, q)
		}
		at := slices.Index(ids, q.ID)
		if at < 0 {
			// The first session's continuation, queued when it came.
			if d.limitRecord(q.ID).RestartOf != ids[0] {
				t.Errorf("queue entry %d is %s, none of the sessions started", i, q.ID)
			}
			continue
		}
		if at < last {
			t.Errorf("the queue is not in the order of the starts: %s before %s", ids[last], q.ID)
		}
		last = at
	}
	if out := d.mustCtl("queue"); !strings.Contains(out, "batch") || !strings.Contains(out, "WAITS FOR") {
		t.Errorf("sessionctl queue:\n%s", out)
	}

	// Watch them all through: at most three run, and every start is the
	// stagger after the one before.
	deadline := time.Now().Add(90 * time.Second)
	var most int
	for {
		running, done := 0, 0
		for _, r := range d.list(true) {
			switch {
			case r.State == "running" || r.State == "starting" || r.State == "warned" || r.State == "stopping":
				running++
			case r.State == "ended" && r.EndReason == "complete":
				done++
			}
		}
		most = max(most, running)
		if done == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 10 completed after 90s\n%s", done, d.mustCtl("ps", "-a"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if most < 1 || most > 3 {
		t.Errorf("at most %d sessions of the pool ran at once, want max_running's 3 never passed", most)
	}
	limited := d.limitRecord(ids[0])
	if limited.EndReason != "limit" || limited.Agent.Limit == nil {
		t.Fatalf("the first session: %+v", limited)
	}
	reset := limited.Agent.Limit.ResetsAt
	var starts []time.Time
	for _, r := range d.list(true) {
		starts = append(starts, r.StartedAt)
		if r.ID != ids[0] && r.StartedAt.Before(reset) {
			t.Errorf("session %s started at %s, before the pool's quota reset at %s", r.ID, r.StartedAt.Format(time.StampMilli), reset.Format(time.StampMilli))
		}
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(starts); i++ {
		// Every start but the first waited for the reset.
		if gap := starts[i].Sub(starts[i-1]); gap < max(stagger, 5*time.Second)-50*time.Millisecond {
			t.Errorf("starts %d and %d of the pool %s apart, want at least the stagger %s and never less than 5s", i, i+1, gap, stagger)
		}
	}
}

// TestLimitStall: an agent that retries its API for longer than
// stall_timeout without progress is stalled and warned; one whose retries
// go through and that works on is left alone.
func TestLimitStall(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	stuck := newAgentSetup(t, "prompt,retry=30:1s,hang")
	dir := project(t)
	id := d.start(append(stuck.flags, "--stall-timeout", "3s", dir, "--", "claude", "-p", "fix it")...)
	var rec limitRecord
	waitFor(t, 20*time.Second, "the retrying agent to stall", func() (bool, string) {
		rec = d.limitRecord(id)
		return rec.Agent != nil && rec.Agent.State == "stalled", "agent " + rec.Agent.State
	})
	if rec.State != "warned" || rec.Warning == nil || rec.Warning.Reason != "stalled" {
		t.Errorf("the stalled session: state %s warning %+v, want warned for stalled", rec.State, rec.Warning)
	}
	if w, err := os.ReadFile(filepath.Join(dir, ".sessiond", "warning.json")); err != nil || !strings.Contains(string(w), "no progress") {
		t.Errorf("the warning file (%v): %s", err, w)
	}
	if types := d.eventTypes(id); !slices.Contains(types, "agent_stalled") || !slices.Contains(types, "warned") {
		t.Errorf("events %v, want agent_stalled and warned", types)
	}
	d.mustCtl("stop", id)

	fine := newAgentSetup(t, "prompt,retry=2:1s,tool,sleep=1s,tool,sleep=1s,tool,sleep=1s,tool,sleep=1s,tool,stop,exit")
	other := project(t)
	ok := d.start(append(fine.flags, "--stall-timeout", "3s", other, "--", "claude", "-p", "fix it")...)
	if end := d.waitEnded(ok, 30*time.Second); end.EndReason != "complete" {
		t.Fatalf("the agent whose retries went through ended %q", end.EndReason)
	}
	if types := d.eventTypes(ok); slices.Contains(types, "agent_stalled") {
		t.Errorf("the agent whose retries went through was stalled: %v", types)
	}
}

// TestLimitHostRebooted: a session live when its host went down (its
// record's boot is not this one) is ended host_rebooted with a handoff,
// nothing signalled; with resume_after_reboot it starts again in its
// conversation.
func TestLimitHostRebooted(t *testing.T) {
	state, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, state, sock)
	dir := project(t)
	a := newAgentSetup(t, "prompt,tool,hang;prompt,stop,exit")
	// The agent's environment from the project's env, which a daemon
	// after the reboot reads again.
	var env []string
	for i := 1; i < len(a.flags); i += 2 {
		k, v, _ := strings.Cut(a.flags[i], "=")
		env = append(env, fmt.Sprintf("%s = %q", k, v))
	}
	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\nresume_after_reboot = true\n[session.env]\n"+strings.Join(env, "\n")+"\n")
	id := d.start(dir, "--", "claude", "-p", "long job")
	working := d.waitAgent(id, "working")
	conv := working.Agent.ConversationID
	// The prompt's hook comes before the transcript's first line (as
	// Claude Code's does): a power cut between the two leaves no
	// conversation to resume, and the next session starts a new one.
	waitFor(t, 10*time.Second, "the conversation's transcript", func() (bool, string) {
		_, err := os.Stat(working.Agent.TranscriptPath)
		return err == nil, fmt.Sprint(err)
	})
	pid := d.inspect(id).PID
	d.kill9()
	// The power goes: the session's processes with it.
	_ = syscallKill(-pid)
	waitFor(t, 10*time.Second, "the session's processes to be gone", func() (bool, string) {
		return !alive(pid), "still there"
	})
	path := filepath.Join(state, "sessions", id, "session.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	raw["boot_id"] = "00000000-0000-4000-8000-000000000001"
	b, _ = json.Marshal(raw)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	d2 := startDaemonAt(t, state, sock)
	end := d2.waitEnded(id, 20*time.Second)
	if end.EndReason != "host_rebooted" {
		t.Fatalf("the session ended %q, want host_rebooted", end.EndReason)
	}
	handoff, err := os.ReadFile(filepath.Join(dir, ".sessiond", "handoff.json"))
	if err != nil || !strings.Contains(string(handoff), `"end_reason": "host_rebooted"`) || !strings.Contains(string(handoff), "the host went down") {
		t.Errorf("the handoff (%v):\n%s", err, handoff)
	}
	next := d2.successor(id, 10*time.Second)
	if done := d2.waitEnded(next, 20*time.Second); done.EndReason != "complete" {
		t.Fatalf("the session started again after the reboot ended %q", done.EndReason)
	}
	if again := d2.limitRecord(next); again.Agent == nil || again.Agent.ResumedFrom != conv {
		t.Errorf("the session after the reboot: %+v, want it to resume %s", again.Agent, conv)
	}
}

// TestLimitSpendCaps: max_cost_usd holds for agents that report no cost as
// they go (Codex; Claude Code on a terminal, which reports it at its exit
// only), at their models' list prices: the session ends budget.
func TestLimitSpendCaps(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	// 200k input and 100k output tokens a request: $1.25 at GPT-5's prices,
	// $2.10 at Claude Sonnet's.
	usage := "FAKEAGENT_USAGE=200000,100000,0,0"
	codex := newAgentSetup(t, "prompt,tool,tool,sleep=60s,stop,exit", usage)
	dir := project(t)
	id := d.start(append(codex.flags, "--max-cost-usd", "2", dir, "--", "codex", "exec", "big job")...)
	if end := d.waitEnded(id, 30*time.Second); end.EndReason != "budget" {
		t.Errorf("the Codex session ended %q, want budget", end.EndReason)
	}
	if rec := d.agentRecord(id); rec.Tokens == nil || rec.Tokens.Input < 400000 {
		t.Errorf("the Codex session's tokens %+v", rec.Tokens)
	}

	claude := newAgentSetup(t, "prompt,tool,tool,hang", usage)
	other := project(t)
	id = d.start(append(claude.flags, "--tty", "--max-cost-usd", "3", other, "--", "claude", "big job")...)
	if end := d.waitEnded(id, 30*time.Second); end.EndReason != "budget" {
		t.Errorf("the interactive Claude session ended %q, want budget", end.EndReason)
	}
	h, _ := os.ReadFile(filepath.Join(other, ".sessiond", "handoff.json"))
	if !strings.Contains(string(h), `"estimated_usd": 4.2`) {
		t.Errorf("the handoff does not carry the estimate of two requests ($4.20):\n%s", h)
	}
}

// TestLimitInteractiveContinues: an interactive Claude Code on its
// terminal hits its quota and waits at its prompt; at the reset sessiond
// types "continue" into it, and the agent works again.
func TestLimitInteractiveContinues(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\nlimit_jitter = \"1s\"\n")
	a := newAgentSetup(t, "prompt,limit=quota:4,input,stop,hang")
	id := d.start(append(a.flags, "--tty", "--timeout", "1h", dir, "--", "claude", "build it")...)
	// The deadline a start gives (the limit may have come already).
	before := d.limitRecord(id).StartedAt.Add(time.Hour)
	var rec limitRecord
	waitFor(t, 20*time.Second, "the agent to be limited", func() (bool, string) {
		rec = d.limitRecord(id)
		return rec.Agent != nil && rec.Agent.State == "limited", "agent " + rec.Agent.State
	})
	if l := rec.Agent.Limit; l.Continue != "type" || l.PausedSeconds < 3 || rec.Deadline.Sub(before) < 3*time.Second {
		t.Errorf("limit %+v, deadline moved by %s: want continue typed, the deadline moved by the wait", l, rec.Deadline.Sub(before))
	}
	waitFor(t, 20*time.Second, "continue typed into the agent", func() (bool, string) {
		in := agenttest.Find(agenttest.ReadLog(t, a.log), "input")
		return len(in) == 1 && in[0].Text == "continue", fmt.Sprint(in)
	})
	d.waitAgent(id, "waiting")
	if types := d.eventTypes(id); !slices.Contains(types, "agent_limited") || !slices.Contains(types, "continued") {
		t.Errorf("events %v, want agent_limited and continued", types)
	}
	if st := d.inspect(id).State; st != "running" {
		t.Errorf("the session is %s after it went on, want running", st)
	}
	d.mustCtl("stop", id)
}

// TestQueueAfterAndRestart: a session started --after-any another waits
// queued, keeps its place over a daemon crash (its record, its environment,
// its --env values and its place are on disk), and starts once the other has ended; one
// started --after a session that does not complete is cancelled.
func TestQueueAfterAndRestart(t *testing.T) {
	t.Parallel()
	state, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, state, sock)
	dir := project(t)
	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\nconcurrent = true\n")
	gate := filepath.Join(t.TempDir(), "go")
	first := d.start(dir, "--", "sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.1; done")
	marker := filepath.Join(t.TempDir(), "ran")
	// Started from a shell whose environment the session keeps, with a
	// value given with --env, which it keeps too (and nowhere but there).
	r := runCtl(t, d.sock, []string{"QUEUE_TEST=kept"}, "start", "-q", "--env", "GIVEN=given-7731", "--after-any", first, dir, "--", "sh", "-c", "echo \"$QUEUE_TEST $GIVEN\" > "+marker)
	second := strings.TrimSpace(r.stdout)
	if r.code != 0 || !validID(second) {
		t.Fatalf("start --after-any: %s", r)
	}
	failing := d.start("--after", first, dir, "--", "true")
	if r := d.ctl("start", "--after-any", "zzzzzzzz", dir, "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "--after-any zzzzzzzz: ") {
		t.Errorf("start --after-any of no session: the error names another flag:\n%s", r)
	}
	if rec := d.limitRecord(second); rec.State != "queued" || rec.Queue == nil || rec.Queue.Reason != "after" {
		t.Fatalf("the session to start after %s: %+v", first, rec)
	}
	if ps := d.mustCtl("ps"); !strings.Contains(ps, "queued #1") || !strings.Contains(ps, "queued #2") {
		t.Errorf("ps does not number the queue:\n%s", ps)
	}
	// A queued session has not run: no uptime.
	if up := d.mustCtl("ps", "-f", "state=queued", "--format", "{{.Uptime}}"); strings.Trim(up, "-\n") != "" {
		t.Errorf("the uptime of queued sessions: %q, want -", up)
	}

	d.kill9()
	d2 := startDaemonAt(t, state, sock)
	if rec := d2.limitRecord(second); rec.State != "queued" {
		t.Fatalf("after the daemon's crash the queued session is %s", rec.State)
	}
	writeFile(t, gate, "")
	if end := d2.waitEnded(second, 20*time.Second); end.EndReason != "complete" {
		t.Fatalf("the session after %s ended %q", first, end.EndReason)
	}
	if b, err := os.ReadFile(marker); err != nil {
		t.Errorf("the queued session did not run: %v", err)
	} else if strings.TrimSpace(string(b)) != "kept given-7731" {
		t.Errorf("the queued session ran with QUEUE_TEST and GIVEN %q, want the environment it was started with and its --env value", b)
	}
	if _, data := d2.readRecordFile(second); strings.Contains(string(data), "given-7731") {
		t.Error("the value given with --env is in the session's record")
	}
	// The first ended as an adopted session does, its status unknown: not
	// complete, so the session to start after its success never runs.
	if end := d2.waitEnded(failing, 20*time.Second); end.EndReason != "cancelled" {
		t.Errorf("the session --after an end that is not complete ended %q, want cancelled", end.EndReason)
	}
}

// TestQueueOrderAcrossACrash: sessions of equal priority queued for a pool
// keep their order over a daemon crash, first come first, whatever their
// ids (the order the next daemon finds their directories in).
func TestQueueOrderAcrossACrash(t *testing.T) {
	t.Parallel()
	state, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	conf := "[pool.b]\nmax_running = 1\n"
	d := startDaemonWith(t, state, sock, conf)
	d.start("--pool", "b", project(t), "--", "sleep", "1000")
	var want []string
	for range 6 {
		want = append(want, d.start("--pool", "b", project(t), "--", "sleep", "1000"))
	}
	order := func(d *daemon) []string {
		var q struct {
			Queued []struct {
				ID string `json:"id"`
			} `json:"queued"`
		}
		out := d.mustCtl("--json", "queue")
		if err := json.Unmarshal([]byte(out), &q); err != nil {
			t.Fatalf("queue --json: %v\n%s", err, out)
		}
		var ids []string
		for _, s := range q.Queued {
			ids = append(ids, s.ID)
		}
		return ids
	}
	if got := order(d); !slices.Equal(got, want) {
		t.Fatalf("the queue is %v, want the order of the starts %v", got, want)
	}
	d.kill9()
	d2 := startDaemonWith(t, state, sock, conf)
	if got := order(d2); !slices.Equal(got, want) {
		t.Errorf("after the daemon's crash the queue is %v, want %v as before it", got, want)
	}
	d2.mustCtl("stop", "--all")
}
