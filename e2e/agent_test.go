package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
)

// agentRecord is the agent part of a session record.
type agentRecord struct {
	Agent *struct {
		Name           string     `json:"name"`
		Integrated     bool       `json:"integrated"`
		ConversationID string     `json:"conversation_id"`
		TranscriptPath string     `json:"transcript_path"`
		ResumedFrom    string     `json:"resumed_from"`
		State          string     `json:"state"`
		StateSince     *time.Time `json:"state_since"`
		WaitingReason  string     `json:"waiting_reason"`
		Turns          int        `json:"turns"`
		LastPrompt     string     `json:"last_prompt"`
		Notices        []string   `json:"notices"`
		Retrying       *struct {
			Since       time.Time `json:"since"`
			Attempts    int       `json:"attempts"`
			MaxAttempts int       `json:"max_attempts"`
			Reason      string    `json:"reason"`
		} `json:"retrying"`
	} `json:"agent"`
	Tokens *struct {
		Input      int64   `json:"input"`
		Output     int64   `json:"output"`
		CacheRead  int64   `json:"cache_read"`
		CacheWrite int64   `json:"cache_write"`
		CostUSD    float64 `json:"cost_usd"`
	} `json:"tokens"`
	Warning *struct {
		Reason string `json:"reason"`
	} `json:"warning"`
	State     string `json:"state"`
	EndReason string `json:"end_reason"`
	RestartOf string `json:"restart_of"`
}

func (d *daemon) agentRecord(id string) agentRecord {
	d.t.Helper()
	var rec agentRecord
	out := d.mustCtl("inspect", id)
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		d.t.Fatalf("inspect %s: %v\n%s", id, err, out)
	}
	return rec
}

// agentSetup is what a test of a stand-in agent needs: the stand-ins on
// PATH, a HOME of its own (their transcripts live under it), the cue
// directory and the stand-in's log; flags gives them to a session.
type agentSetup struct {
	home, cues, log string
	flags           []string
}

func newAgentSetup(t *testing.T, script string, more ...string) agentSetup {
	t.Helper()
	bin := agenttest.Build(t)
	a := agentSetup{home: t.TempDir(), cues: t.TempDir()}
	a.log = filepath.Join(t.TempDir(), "agent.log")
	a.flags = []string{
		"--env", "PATH=" + agenttest.Path(bin), "--env", "HOME=" + a.home,
		"--env", "FAKEAGENT_DIR=" + a.cues, "--env", "FAKEAGENT_LOG=" + a.log,
		"--env", "FAKEAGENT_SCRIPT=" + script,
	}
	for _, m := range more {
		a.flags = append(a.flags, "--env", m)
	}
	return a
}

func (a agentSetup) cue(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(a.cues, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitAgent waits until the session's agent is in state st.
func (d *daemon) waitAgent(id, st string) agentRecord {
	d.t.Helper()
	var rec agentRecord
	waitFor(d.t, 20*time.Second, "agent of "+id+" to be "+st, func() (bool, string) {
		rec = d.agentRecord(id)
		if rec.Agent == nil {
			return false, "no agent in the record"
		}
		return rec.Agent.State == st, "agent state " + rec.Agent.State + ", session " + rec.State
	})
	return rec
}

// waitTurn waits until the agent of session id works on prompt: its
// prompt's hook has been handled, not only an earlier one that said it
// works (a file written before that hook is the person's, not the turn's).
func (d *daemon) waitTurn(id, prompt string) {
	d.t.Helper()
	waitFor(d.t, 20*time.Second, "agent of "+id+" to work on "+prompt, func() (bool, string) {
		rec := d.agentRecord(id)
		if rec.Agent == nil {
			return false, "no agent in the record"
		}
		return rec.Agent.State == "working" && rec.Agent.LastPrompt == prompt, "agent state " + rec.Agent.State + ", last prompt " + rec.Agent.LastPrompt
	})
}

// eventTypes are the types of the daemon's recent events of session id.
func (d *daemon) eventTypes(id string) []string {
	d.t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(d.mustCtl("--json", "events")), "\n") {
		var ev struct {
			Type      string `json:"type"`
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.SessionID == id {
			out = append(out, ev.Type)
		}
	}
	return out
}

// TestAgentStates runs the Claude Code stand-in headless through a turn
// with a permission prompt: the record follows it from working to waiting
// (for what) to working to idle, each change an event; the conversation
// sessiond chose, the transcript and its usage land in the record, the
// handoff, the session state and the progress log.
func TestAgentStates(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	a := newAgentSetup(t, "prompt,tool,ask,stop,wait=done,exit")
	id := d.start(append(a.flags, dir, "--", "claude", "-p", "fix the login bug")...)

	rec := d.waitAgent(id, "waiting")
	if rec.Agent.Name != "claude-code" || !rec.Agent.Integrated {
		t.Errorf("agent = %+v, want claude-code, integrated", rec.Agent)
	}
	if rec.Agent.WaitingReason != "permission: Bash" {
		t.Errorf("waiting_reason = %q, want %q", rec.Agent.WaitingReason, "permission: Bash")
	}
	if rec.Agent.LastPrompt != "fix the login bug" {
		t.Errorf("last_prompt = %q", rec.Agent.LastPrompt)
	}
	ps := d.mustCtl("ps")
	if !strings.Contains(ps, "running·waiting") {
		t.Errorf("ps does not show the agent waiting:\n%s", ps)
	}
	a.cue(t, "grant")
	rec = d.waitAgent(id, "idle")
	if rec.Agent.Turns != 1 {
		t.Errorf("turns = %d after one turn", rec.Agent.Turns)
	}
	a.cue(t, "done")
	end := d.waitEnded(id, 20*time.Second)
	if end.EndReason != "complete" {
		t.Fatalf("end reason %q, want complete", end.EndReason)
	}
	rec = d.agentRecord(id)
	types := d.eventTypes(id)
	for _, want := range []string{"agent_working", "agent_waiting", "agent_idle"} {
		if !slices.Contains(types, want) {
			t.Errorf("events of the session %v: no %s", types, want)
		}
	}
	if n := strings.Count(strings.Join(types, " "), "agent_waiting"); n != 1 {
		t.Errorf("%d agent_waiting events for one wait, want 1", n)
	}

	// The conversation sessiond chose is the one the agent ran.
	log := agenttest.ReadLog(t, a.log)
	starts := agenttest.Find(log, "start")
	if len(starts) != 1 || starts[0].ConversationID != rec.Agent.ConversationID || rec.Agent.ConversationID == "" {
		t.Fatalf("agent started with conversation %v, record says %q", starts, rec.Agent.ConversationID)
	}
	if starts[0].Transcript != rec.Agent.TranscriptPath {
		t.Errorf("transcript: agent %q, record %q", starts[0].Transcript, rec.Agent.TranscriptPath)
	}
	// Three model requests of 25 in, 15 out, 50 cache read, 100 cache write.
	if rec.Tokens == nil || rec.Tokens.Input != 75 || rec.Tokens.Output != 45 || rec.Tokens.CacheRead != 150 || rec.Tokens.CacheWrite != 300 {
		t.Errorf("tokens = %+v, want 75/45/150/300", rec.Tokens)
	}
	var h struct {
		Agent struct {
			Name           string `json:"name"`
			ConversationID string `json:"conversation_id"`
			TranscriptPath string `json:"transcript_path"`
			Tokens         struct {
				Input int64 `json:"input"`
			} `json:"tokens"`
		} `json:"agent"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("handoff", id)), &h); err != nil {
		t.Fatal(err)
	}
	if h.Agent.ConversationID != rec.Agent.ConversationID || h.Agent.TranscriptPath != rec.Agent.TranscriptPath || h.Agent.Tokens.Input != 75 {
		t.Errorf("handoff agent = %+v, want the record's conversation and tokens", h.Agent)
	}
	var st struct {
		Conversation struct {
			ID    string `json:"id"`
			Agent string `json:"agent"`
		} `json:"conversation"`
	}
	data, err := os.ReadFile(filepath.Join(dir, ".sessiond", "session_state.json"))
	if err != nil || json.Unmarshal(data, &st) != nil || st.Conversation.ID != rec.Agent.ConversationID || st.Conversation.Agent != "claude-code" {
		t.Errorf("session_state.json conversation = %+v (%v), want %s", st.Conversation, err, rec.Agent.ConversationID)
	}
	progress, _ := os.ReadFile(filepath.Join(dir, ".sessiond", "progress.md"))
	if !strings.Contains(string(progress), "Agent: claude-code, conversation "+rec.Agent.ConversationID+", 1 turn; 570 tokens") {
		t.Errorf("progress.md has no agent line with the tokens:\n%s", progress)
	}
}

// TestAgentWaitingTimeout: an agent that waits for a permission longer
// than waiting_timeout is warned, then stopped with end reason waiting,
// and the handoff says what it waited for.
func TestAgentWaitingTimeout(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	a := newAgentSetup(t, "prompt,ask,stop,exit")
	id := d.start(append(a.flags, "--waiting-timeout", "3s", dir, "--", "claude", "-p", "deploy")...)
	d.waitAgent(id, "waiting")
	d.waitState(id, 10*time.Second, "warned", "stopping", "ended")
	end := d.waitEnded(id, 20*time.Second)
	if end.EndReason != "waiting" {
		t.Fatalf("end reason %q, want waiting", end.EndReason)
	}
	// The agent's settings (its environment, an API key among it) are
	// kept no longer than the session.
	for _, f := range []string{"claude-settings.json", "claude-mcp.json"} {
		if p := filepath.Join(d.stateDir, "sessions", id, f); fileExists(p) {
			t.Errorf("%s is left after the session's end", p)
		}
	}
	rec := d.agentRecord(id)
	if rec.Warning == nil || rec.Warning.Reason != "waiting" {
		t.Errorf("warning = %+v, want reason waiting", rec.Warning)
	}
	var h struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("handoff", id)), &h); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(h.Warnings, "the agent was waiting for permission: Bash") {
		t.Errorf("handoff warnings %q do not say what the agent waited for", h.Warnings)
	}
	if r := d.ctl("inspect", id); !strings.Contains(r.stdout, `"waiting_reason": "permission: Bash"`) {
		t.Errorf("the record lost what the agent waited for:\n%s", r.stdout)
	}
}

// TestAgentBudget: at budget_warn of max_tokens the agent is warned in its
// own conversation (the warning comes back as a hook's added context),
// then at the cap the session stops with end reason budget.
func TestAgentBudget(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	// 400 tokens per model request; the cap is 1000, the warning at 800.
	a := newAgentSetup(t, "prompt,tool,tool,tool,tool,hang", "FAKEAGENT_USAGE=100,100,100,100")
	id := d.start(append(a.flags, "--max-tokens", "1000", dir, "--", "claude", "-p", "refactor")...)
	end := d.waitEnded(id, 30*time.Second)
	if end.EndReason != "budget" {
		t.Fatalf("end reason %q, want budget", end.EndReason)
	}
	rec := d.agentRecord(id)
	if rec.Tokens == nil || rec.Tokens.Input+rec.Tokens.Output+rec.Tokens.CacheRead+rec.Tokens.CacheWrite < 1000 {
		t.Errorf("tokens %+v: stopped before the cap", rec.Tokens)
	}
	types := d.eventTypes(id)
	if !slices.Contains(types, "budget") || !slices.Contains(types, "warned") {
		t.Errorf("events %v: want the budget's warning", types)
	}
	var told []string
	for _, e := range agenttest.Find(agenttest.ReadLog(t, a.log), "context") {
		if strings.Contains(e.Text, "budget") {
			told = append(told, e.Text)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], "80% of this session's budget is spent (800 of 1000 tokens)") {
		t.Errorf("the agent was told %q, want the budget's warning once", told)
	}
}

// TestAgentResume: a new session continues the project's conversation on
// request (start --resume), a restart after a crash continues its own
// (resume = "on-restart", the default), and a conversation whose
// transcript is gone starts fresh with a notice.
func TestAgentResume(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	a := newAgentSetup(t, "prompt,stop,exit")
	first := d.start(append(a.flags, dir, "--", "claude", "-p", "start the work")...)
	d.waitEnded(first, 20*time.Second)
	conv := d.agentRecord(first).Agent.ConversationID

	second := d.start(append(a.flags, "--resume", dir, "--", "claude", "-p", "go on")...)
	d.waitEnded(second, 20*time.Second)
	rec := d.agentRecord(second)
	if rec.Agent.ConversationID != conv || rec.Agent.ResumedFrom != conv {
		t.Errorf("resumed session: conversation %q resumed_from %q, want %s", rec.Agent.ConversationID, rec.Agent.ResumedFrom, conv)
	}
	ctx, _ := os.ReadFile(filepath.Join(dir, ".sessiond", "context.md"))
	if !strings.Contains(string(ctx), "continues claude-code conversation `"+conv+"`") {
		t.Errorf("context.md does not say which conversation it continues:\n%s", ctx)
	}
	starts := agenttest.Find(agenttest.ReadLog(t, a.log), "start")
	if len(starts) != 2 || starts[1].Source != "resume" || !slices.Contains(starts[1].Argv, "--resume") {
		t.Errorf("the second run of the agent: %v, want a --resume", starts)
	}
	// Only this session's usage counts: one request, not the two the
	// conversation holds.
	if rec.Tokens == nil || rec.Tokens.Input != 25 {
		t.Errorf("resumed session tokens %+v, want this session's own (input 25)", rec.Tokens)
	}

	// A crash, then the restart continues the same conversation.
	crash := newAgentSetup(t, "prompt,tool,crash")
	dir2 := project(t)
	id := d.start(append(crash.flags, "--restart", "on-failure", dir2, "--", "claude", "-p", "risky")...)
	d.waitEnded(id, 20*time.Second)
	crashed := d.agentRecord(id).Agent.ConversationID
	var next string
	waitFor(t, 20*time.Second, "the restart of "+id, func() (bool, string) {
		for _, r := range d.list(true) {
			if r.RestartOf == id {
				next = r.ID
				return true, ""
			}
		}
		return false, "no restart yet"
	})
	waitFor(t, 20*time.Second, "the restart's agent", func() (bool, string) {
		rec = d.agentRecord(next)
		return rec.Agent != nil && rec.Agent.ConversationID != "", "state " + rec.State
	})
	if rec.Agent.ResumedFrom != crashed || rec.Agent.ConversationID != crashed {
		t.Errorf("restart after a crash: conversation %q resumed_from %q, want %s", rec.Agent.ConversationID, rec.Agent.ResumedFrom, crashed)
	}
	d.mustCtl("stop", dir2)

	// The transcript is gone: a new conversation, and a notice says why.
	if err := os.RemoveAll(filepath.Join(a.home, ".claude")); err != nil {
		t.Fatal(err)
	}
	third := d.start(append(a.flags, "--resume", dir, "--", "claude", "-p", "again")...)
	d.waitEnded(third, 20*time.Second)
	rec = d.agentRecord(third)
	if rec.Agent.ConversationID == conv || rec.Agent.ResumedFrom != "" {
		t.Errorf("resume of a lost transcript: conversation %q resumed_from %q, want a new one", rec.Agent.ConversationID, rec.Agent.ResumedFrom)
	}
	if !strings.Contains(strings.Join(rec.Agent.Notices, "\n"), "is not resumed") {
		t.Errorf("notices %q: want why the conversation was not resumed", rec.Agent.Notices)
	}
	if r := d.ctl("start", "--resume="+dir2+"/nowhere", dir, "--", "claude", "-p", "x"); r.code == 0 || !strings.Contains(r.stderr, "nowhere") {
		t.Errorf("resume from a project that does not exist: %s", r)
	}
}

// TestAgentResumePolicy: resume = "always" continues the project's last
// conversation in every new session, "never" not even in a restart, and
// the default continues it in a restart, sessionctl restart's included.
func TestAgentResumePolicy(t *testing.T) {
	d := startDaemon(t)
	policy := func(t *testing.T, resume string) string {
		t.Helper()
		dir := project(t)
		if resume != "" {
			spec := "[session]\nresume = \"" + resume + "\"\n"
			if err := os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte(spec), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}

	t.Run("always", func(t *testing.T) {
		dir := policy(t, "always")
		a := newAgentSetup(t, "prompt,stop,exit")
		first := d.start(append(a.flags, dir, "--", "claude", "-p", "start the work")...)
		d.waitEnded(first, 20*time.Second)
		conv := d.agentRecord(first).Agent.ConversationID
		second := d.start(append(a.flags, dir, "--", "claude", "-p", "go on")...)
		d.waitEnded(second, 20*time.Second)
		if rec := d.agentRecord(second); rec.Agent.ResumedFrom != conv || rec.Agent.ConversationID != conv {
			t.Errorf("a new session under resume = always: conversation %q resumed_from %q, want %s", rec.Agent.ConversationID, rec.Agent.ResumedFrom, conv)
		}
	})

	t.Run("never", func(t *testing.T) {
		dir := policy(t, "never")
		a := newAgentSetup(t, "prompt,tool,crash")
		id := d.start(append(a.flags, "--restart", "on-failure", dir, "--", "claude", "-p", "risky")...)
		d.waitEnded(id, 20*time.Second)
		crashed := d.agentRecord(id).Agent.ConversationID
		next := waitRestartOf(t, d, id)
		var rec agentRecord
		waitFor(t, 20*time.Second, "the restart's agent", func() (bool, string) {
			rec = d.agentRecord(next)
			return rec.Agent != nil && rec.Agent.ConversationID != "", "state " + rec.State
		})
		if rec.Agent.ResumedFrom != "" || rec.Agent.ConversationID == crashed {
			t.Errorf("a restart under resume = never: conversation %q resumed_from %q, want a new one", rec.Agent.ConversationID, rec.Agent.ResumedFrom)
		}
		d.ctl("stop", dir)
	})

	t.Run("sessionctl restart", func(t *testing.T) {
		dir := policy(t, "")
		a := newAgentSetup(t, "prompt,stop,exit")
		first := d.start(append(a.flags, dir, "--", "claude", "-p", "start the work")...)
		d.waitEnded(first, 20*time.Second)
		conv := d.agentRecord(first).Agent.ConversationID
		d.mustCtl("restart", first)
		next := waitRestartOf(t, d, first)
		d.waitEnded(next, 20*time.Second)
		if rec := d.agentRecord(next); rec.Agent.ResumedFrom != conv || rec.Agent.ConversationID != conv {
			t.Errorf("sessionctl restart: conversation %q resumed_from %q, want %s", rec.Agent.ConversationID, rec.Agent.ResumedFrom, conv)
		}
	})
}

// waitCheckpointCount waits until session id counts n checkpoints.
func waitCheckpointCount(t *testing.T, d *daemon, id string, n int) {
	t.Helper()
	waitFor(t, 20*time.Second, fmt.Sprintf("%d checkpoints", n), func() (bool, string) {
		got := d.inspect(id).Checkpoints
		return got == n, fmt.Sprint(got)
	})
}

// waitRestartOf waits for the session that restarts id and returns its id.
func waitRestartOf(t *testing.T, d *daemon, id string) string {
	t.Helper()
	var next string
	waitFor(t, 20*time.Second, "the restart of "+id, func() (bool, string) {
		for _, r := range d.list(true) {
			if r.RestartOf == id {
				next = r.ID
				return true, ""
			}
		}
		return false, "no restart yet"
	})
	return next
}

// TestAgentCodex: the Codex stand-in, headless: its notify program reports
// the turn, the conversation is found among its rollouts, its usage read.
func TestAgentCodex(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	a := newAgentSetup(t, "prompt,tool,stop,wait=done,exit")
	id := d.start(append(a.flags, dir, "--", "codex", "exec", "add tests")...)
	rec := d.waitAgent(id, "idle")
	if rec.Agent.Name != "codex" || rec.Agent.Turns != 1 || rec.Agent.ConversationID == "" || rec.Agent.TranscriptPath == "" {
		t.Errorf("codex agent = %+v, want one turn and its conversation", rec.Agent)
	}
	a.cue(t, "done")
	d.waitEnded(id, 20*time.Second)
	rec = d.agentRecord(id)
	if rec.Tokens == nil || rec.Tokens.Output == 0 {
		t.Errorf("codex tokens = %+v, want the rollout's", rec.Tokens)
	}
	starts := agenttest.Find(agenttest.ReadLog(t, a.log), "start")
	if len(starts) != 1 || starts[0].ConversationID != rec.Agent.ConversationID {
		t.Errorf("codex ran conversation %v, record says %q", starts, rec.Agent.ConversationID)
	}
}

// TestAgentHookBadInput: a hook payload that is garbage, or a hook run
// outside a session, never fails the agent (exit 0); the daemon keeps a
// notice and the session goes on.
func TestAgentHookBadInput(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	a := newAgentSetup(t, "prompt,hang")
	id := d.start(append(a.flags, dir, "--", "claude", "-p", "wait")...)
	d.waitAgent(id, "working")
	for _, payload := range []string{"not json at all", `{"hook_event_name": "Bogus"}`, "", strings.Repeat("x", 2<<20)} {
		cmd := exec.Command(sessionctlBin, "--socket", d.sock, "hook", "claude-code")
		cmd.Env = append(cleanEnv(), "SESSIOND_SESSION_ID="+id)
		cmd.Stdin = strings.NewReader(payload)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("hook with payload %.20q: %v (a hook must never fail the agent)\n%s", payload, err, out)
		}
	}
	outside := exec.Command(sessionctlBin, "--socket", d.sock, "hook", "codex", `{"type":"agent-turn-complete"}`)
	outside.Env = cleanEnv()
	if out, err := outside.CombinedOutput(); err != nil {
		t.Errorf("hook outside a session: %v\n%s", err, out)
	}
	rec := d.agentRecord(id)
	if rec.State != "running" || rec.Agent.State != "working" {
		t.Errorf("after bad payloads: session %s, agent %s; want it going on", rec.State, rec.Agent.State)
	}
	if !strings.Contains(strings.Join(rec.Agent.Notices, "\n"), "a hook payload was refused") {
		t.Errorf("notices %q: want the refused payloads said", rec.Agent.Notices)
	}
	d.mustCtl("stop", id)
}

// TestAgentMCP drives `sessionctl mcp` with an MCP client, as an agent
// would: time left, a report, a checkpoint, the briefing, an extension
// within agent_may_extend and one beyond it.
func TestAgentMCP(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	if err := os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte("[session]\nagent_may_extend = \"10m\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "feature_list.json"), []byte(`[{"id": 1, "description": "Login", "priority": 1, "passes": false}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	id := d.start(dir, "--", "sleep", "300")
	before := d.inspect(id)

	cmd := exec.Command(sessionctlBin, "--socket", d.sock, "mcp")
	cmd.Env = append(cleanEnv(), "SESSIOND_SESSION_ID="+id)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "v0"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		if res.StructuredContent != nil {
			b, _ := json.Marshal(res.StructuredContent)
			text = append(text, string(b))
		}
		return strings.Join(text, "\n"), res.IsError
	}
	if out, isErr := call("time_remaining", nil); isErr || !strings.Contains(out, `"may_extend":"10m`) {
		t.Errorf("time_remaining: %q (error %v), want the extension cap", out, isErr)
	}
	if out, isErr := call("report", map[string]any{"summary": "login form done", "blockers_add": []any{map[string]any{"question": "Which OAuth provider?"}}}); isErr {
		t.Errorf("report: %s", out)
	}
	if out, isErr := call("handoff", nil); isErr || !strings.Contains(out, "Login") {
		t.Errorf("handoff: %q, want the next task Login", out)
	}
	if err := os.WriteFile(filepath.Join(dir, "login.go"), []byte("package login\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, isErr := call("checkpoint", nil); isErr || !strings.Contains(out, "files changed") {
		t.Errorf("checkpoint: %q", out)
	}
	if out, isErr := call("extend", map[string]any{"by": "5m"}); isErr {
		t.Errorf("extend 5m within the cap: %s", out)
	}
	if out, isErr := call("extend", map[string]any{"by": "6m"}); !isErr || !strings.Contains(out, "refused") {
		t.Errorf("extend 6m beyond what is left: %q (error %v), want refused", out, isErr)
	}
	after := d.inspect(id)
	if got := after.Deadline.Sub(before.Deadline); got != 5*time.Minute {
		t.Errorf("deadline moved %s, want 5m", got)
	}
	if after.Checkpoints != 1 {
		t.Errorf("checkpoints = %d after the tool's", after.Checkpoints)
	}
	var full struct {
		Report struct {
			Summary string `json:"summary"`
		} `json:"report"`
		Blockers []struct {
			Question string `json:"question"`
		} `json:"blockers"`
	}
	_ = json.Unmarshal([]byte(d.mustCtl("inspect", id)), &full)
	if full.Report.Summary != "login form done" || len(full.Blockers) != 1 || full.Blockers[0].Question != "Which OAuth provider?" {
		t.Errorf("the report did not land: %+v", full)
	}
	d.mustCtl("stop", id)
}

// TestAgentRealClaudeCode runs the real Claude Code from npm under
// sessiond, with a dummy key and no network: its SessionStart hook brings
// the conversation id sessiond chose, and the transcript path, to the
// record; then it hangs retrying the API, like a stuck agent.
func TestAgentRealClaudeCode(t *testing.T) {
	claude := agenttest.RealClaude(t)
	// A loopback address that refuses every request: no network here.
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer dead.Close()
	d := startDaemon(t)
	dir := project(t)
	home := t.TempDir()
	// The key comes from the shell that runs sessionctl start, as a
	// newcomer sets it: ANTHROPIC_API_KEY=... sessionctl start . -- claude.
	const key = "sk-ant-test-dummy-key-0123456789"
	r := runCtl(t, d.sock, []string{"ANTHROPIC_API_KEY=" + key, "ANTHROPIC_BASE_URL=" + dead.URL, "HOME=" + home},
		"start", "-q", "--env", "DISABLE_AUTOUPDATER=1",
		"--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "--env", "PATH=/usr/local/bin:/usr/bin:/bin",
		dir, "--", claude, "-p", "hello")
	if r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	id := strings.TrimSpace(r.stdout)
	var rec agentRecord
	waitFor(t, 90*time.Second, "the SessionStart hook of the real Claude Code", func() (bool, string) {
		rec = d.agentRecord(id)
		if rec.Agent == nil {
			return false, "no agent"
		}
		return rec.Agent.State == "working" && rec.Agent.StateSince != nil && rec.Agent.LastPrompt == "hello", "agent " + rec.Agent.State + ", prompt " + rec.Agent.LastPrompt
	})
	// The id sessiond chose is on the agent's command line; the hooks,
	// whose word wins, brought the same one.
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d.inspect(id).PID), "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Split(string(cmdline), "\x00")
	environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d.inspect(id).PID), "environ"))
	if err != nil || !slices.Contains(strings.Split(string(environ), "\x00"), "ANTHROPIC_API_KEY="+key) {
		t.Errorf("Claude Code runs without the caller's ANTHROPIC_API_KEY (%v)", err)
	}
	if out := d.mustCtl("inspect", id); strings.Contains(out, key) {
		t.Error("inspect shows the API key")
	}
	var chosen string
	if i := slices.Index(argv, "--session-id"); i >= 0 && i+1 < len(argv) {
		chosen = argv[i+1]
	}
	if chosen == "" || rec.Agent.ConversationID != chosen {
		t.Errorf("conversation id: record %q, --session-id given %q (argv %q)", rec.Agent.ConversationID, chosen, argv)
	}
	wantDir := filepath.Join(home, ".claude", "projects")
	if !strings.HasPrefix(rec.Agent.TranscriptPath, wantDir) || !strings.HasSuffix(rec.Agent.TranscriptPath, chosen+".jsonl") {
		t.Errorf("transcript path %q, want under %s ending in the conversation id", rec.Agent.TranscriptPath, wantDir)
	}
	// Its requests fail and it retries them: the record and ps say so,
	// since when and why, though its hooks said working.
	waitFor(t, 30*time.Second, "the record to say the agent retries its API", func() (bool, string) {
		rec = d.agentRecord(id)
		if rec.Agent.Retrying == nil {
			return false, "agent " + rec.Agent.State
		}
		return strings.Contains(rec.Agent.Retrying.Reason, "503") && rec.Agent.Retrying.Attempts >= 1, fmt.Sprintf("%+v", *rec.Agent.Retrying)
	})
	if r := rec.Agent.Retrying; r.Since.Before(rec.Agent.StateSince.Add(-time.Second)) || r.MaxAttempts < r.Attempts {
		t.Errorf("retrying %+v, agent working since %v", *r, rec.Agent.StateSince)
	}
	if ps := d.mustCtl("ps"); !strings.Contains(ps, "running·retrying") || !strings.Contains(ps, "503") {
		t.Errorf("ps does not say the agent retries:\n%s", ps)
	}
	if evs := d.mustCtl("events"); !strings.Contains(evs, "agent retrying its API: 503") {
		t.Errorf("no agent_retrying event:\n%s", evs)
	}
	d.mustCtl("stop", id)
	d.waitEnded(id, 30*time.Second)
	if h := d.mustCtl("--json", "handoff", id); !strings.Contains(h, "the agent was retrying its API for") {
		t.Errorf("the handoff does not say the agent was retrying:\n%s", h)
	}
}

// TestAgentTurnCheckpoints: with checkpoint_on = ["turn"], each turn of the
// agent ends with a checkpoint named after its prompt, so that the list
// reads like the conversation, and a restore goes back to before a turn.
func TestAgentTurnCheckpoints(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte("[session]\ncheckpoint = \"\"\ncheckpoint_on = [\"turn\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAgentSetup(t, "prompt=Add the login form,wait=one,stop,prompt=Add the logout button,wait=two,stop,wait=done,exit")
	id := d.start(append(a.flags, dir, "--", "claude", "-p", "start")...)
	d.waitTurn(id, "Add the login form")
	write := func(name, text string) { t.Helper(); writeFile(t, filepath.Join(dir, name), text) }
	waitCheckpoints := func(n int) { t.Helper(); waitCheckpointCount(t, d, id, n) }
	write("login.html", "<form>\n")
	a.cue(t, "one")
	waitCheckpoints(1)
	write("logout.html", "<button>\n")
	a.cue(t, "two")
	waitCheckpoints(2)
	a.cue(t, "done")
	d.waitEnded(id, 20*time.Second)

	var list []struct {
		ID      string   `json:"id"`
		Turn    string   `json:"turn"`
		Summary string   `json:"summary"`
		Files   []string `json:"files"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("--json", "checkpoints", dir)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Turn != "Add the logout button" || list[1].Turn != "Add the login form" {
		t.Fatalf("checkpoints %+v, want one per turn, newest first, named after its prompt", list)
	}
	if !slices.Contains(list[0].Files, "logout.html") || slices.Contains(list[0].Files, "login.html") {
		t.Errorf("the second turn's checkpoint names %q, want logout.html only", list[0].Files)
	}
	table := d.mustCtl("checkpoints", dir)
	if !strings.Contains(table, `Turn "Add the logout button": 1 file changed: logout.html`) {
		t.Errorf("checkpoints table does not read like the conversation:\n%s", table)
	}
	if st := d.mustCtl("checkpoints", "--stats", dir); !strings.Contains(st, "2 checkpoints of 1 session") || !strings.Contains(st, "only checkpoints reach") {
		t.Errorf("checkpoints --stats:\n%s", st)
	}
	// Back to before the second turn.
	d.mustCtl("restore", dir, list[1].ID)
	if _, err := os.Stat(filepath.Join(dir, "logout.html")); !os.IsNotExist(err) {
		t.Errorf("logout.html is still there after the restore to before its turn: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "login.html")); err != nil || string(b) != "<form>\n" {
		t.Errorf("login.html after the restore: %q, %v", b, err)
	}
}

// TestAgentCheckpointBeforePrompt: what a person changes between two turns
// gets a checkpoint of its own when the next prompt comes, named after it,
// so that a restore goes back to just before that turn, the person's edit
// kept; a prompt with nothing changed since the last checkpoint makes none.
func TestAgentCheckpointBeforePrompt(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte("[session]\ncheckpoint = \"\"\ncheckpoint_on = [\"turn\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAgentSetup(t, "prompt=Write the notes,wait=one,stop,wait=between,prompt=Tidy the notes,wait=two,stop,wait=again,prompt=Nothing to do,wait=three,stop,wait=done,exit")
	id := d.start(append(a.flags, dir, "--", "claude", "-p", "start")...)
	d.waitTurn(id, "Write the notes")
	write := func(name, text string) { t.Helper(); writeFile(t, filepath.Join(dir, name), text) }
	waitCheckpoints := func(n int) { t.Helper(); waitCheckpointCount(t, d, id, n) }
	write("notes.md", "by the agent\n")
	a.cue(t, "one")
	waitCheckpoints(1)
	// Between the turns, the person edits a file of their own.
	write("mine.md", "by hand\n")
	time.Sleep(200 * time.Millisecond) // past the watcher's coalescing
	a.cue(t, "between")
	waitCheckpoints(2)
	write("notes.md", "tidied by the agent\n")
	a.cue(t, "two")
	waitCheckpoints(3)
	a.cue(t, "again") // nothing changed since the last turn's checkpoint
	a.cue(t, "three")
	a.cue(t, "done")
	d.waitEnded(id, 20*time.Second)

	var list []struct {
		ID    string   `json:"id"`
		Turn  string   `json:"turn"`
		Files []string `json:"files"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("--json", "checkpoints", dir)), &list); err != nil {
		t.Fatal(err)
	}
	var turns []string
	for _, c := range list {
		turns = append(turns, c.Turn)
	}
	want := []string{"Tidy the notes", "before: Tidy the notes", "Write the notes"}
	if !slices.Equal(turns, want) {
		t.Fatalf("checkpoints named %q, want %q (newest first)", turns, want)
	}
	if !slices.Equal(list[1].Files, []string{"mine.md"}) {
		t.Errorf("the checkpoint before the second turn names %q, want the person's mine.md alone", list[1].Files)
	}
	// Back to just before the second turn: the person's edit is there, the
	// agent's tidying is not.
	d.mustCtl("restore", dir, list[1].ID)
	if b, err := os.ReadFile(filepath.Join(dir, "notes.md")); err != nil || string(b) != "by the agent\n" {
		t.Errorf("notes.md after the restore: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "mine.md")); err != nil || string(b) != "by hand\n" {
		t.Errorf("mine.md after the restore: %q, %v", b, err)
	}
}

// TestAgentAdoptedAfterDaemonCrash: a daemon killed with -9 while an agent
// works, and started again: it adopts the session with its agent, whose
// next hooks move its state and whose tokens go on from what was counted.
func TestAgentAdoptedAfterDaemonCrash(t *testing.T) {
	state, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, state, sock)
	dir := project(t)
	a := newAgentSetup(t, "prompt,tool,wait=go,tool,stop,wait=done,exit")
	id := d.start(append(a.flags, dir, "--", "claude", "-p", "long job")...)
	var before agentRecord
	waitFor(t, 20*time.Second, "the first tool's tokens on disk", func() (bool, string) {
		data, err := os.ReadFile(filepath.Join(state, "sessions", id, "session.json"))
		if err != nil || json.Unmarshal(data, &before) != nil || before.Tokens == nil {
			return false, "no tokens on disk yet"
		}
		return true, ""
	})
	d.kill9()
	d2 := startDaemonAt(t, state, sock)
	a.cue(t, "go")
	rec := d2.waitAgent(id, "idle")
	// The turn's tokens are read from its transcript, which the agent
	// may finish writing after its last hook.
	waitFor(t, 20*time.Second, "the tokens of the turn after the adoption", func() (bool, string) {
		rec = d2.agentRecord(id)
		return rec.Tokens != nil && rec.Tokens.Input > before.Tokens.Input, fmt.Sprintf("tokens %+v, %d input counted before", rec.Tokens, before.Tokens.Input)
	})
	if rec.Agent.Turns != 1 || rec.Agent.ConversationID != before.Agent.ConversationID {
		t.Errorf("adopted agent %+v, want its turn counted in the same conversation %s", rec.Agent, before.Agent.ConversationID)
	}
	a.cue(t, "done")
	d2.waitEnded(id, 20*time.Second)
}

// TestAgentStateOneTruth: right after each of 50 hook-driven changes of
// the agent's state, sessionctl ps, ps --json and inspect all say the
// state the session's actor has, and so does the event that tells of it.
func TestAgentStateOneTruth(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	events := followEvents(t, d)
	a := newAgentSetup(t, "prompt,hang")
	id := d.start(append(a.flags, dir, "--", "claude", "-p", "fix the login bug")...)
	// The stand-in's own hooks first: its start and its prompt.
	var rec agentRecord
	waitFor(t, 20*time.Second, "the agent's prompt", func() (bool, string) {
		rec = d.agentRecord(id)
		return rec.Agent != nil && rec.Agent.LastPrompt != "" && rec.Agent.State == "working", d.mustCtl("inspect", id)
	})
	conv := rec.Agent.ConversationID
	hook := func(payload map[string]any) {
		t.Helper()
		payload["session_id"], payload["cwd"] = conv, dir
		body, _ := json.Marshal(payload)
		cmd := exec.Command(sessionctlBin, "--socket", d.sock, "hook", "claude-code")
		cmd.Env = append(cleanEnv(), "SESSIOND_SESSION_ID="+id)
		cmd.Stdin = bytes.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Fatalf("sessionctl hook: %v\n%s", err, out)
		}
	}
	for i := range 50 {
		want := "waiting"
		if i%2 == 1 {
			want = "working"
			hook(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}})
		} else {
			hook(map[string]any{"hook_event_name": "Notification", "notification_type": "permission_prompt",
				"message": "Claude needs your permission to use Bash"})
		}
		if got := d.agentRecord(id).Agent.State; got != want {
			t.Fatalf("change %d: inspect says %s, want %s", i, got, want)
		}
		if ps := d.mustCtl("ps"); !strings.Contains(ps, "running·"+want) {
			t.Fatalf("change %d: ps does not say running·%s:\n%s", i, want, ps)
		}
		var list []agentRecord
		if err := json.Unmarshal([]byte(d.mustCtl("ps", "--json")), &list); err != nil || len(list) != 1 || list[0].Agent == nil || list[0].Agent.State != want {
			t.Fatalf("change %d: ps --json = %+v (%v), want the agent %s", i, list, err, want)
		}
		n := i
		events.waitEvent(fmt.Sprintf("the event of change %d", i), 5*time.Second, func(ev streamEvent) bool {
			return ev.SessionID == id && ev.Type == "agent_"+want && len(events.find(func(e streamEvent) bool {
				return e.SessionID == id && (e.Type == "agent_waiting" || e.Type == "agent_working")
			})) > n
		})
	}
	d.mustCtl("stop", id)
}

// TestAgentWarningsOnceAcrossACrash: a session given its deadline's
// warning and then a waiting warning is given neither again by the daemon
// that adopts it after a crash (the record's last warning is the waiting
// one; the deadline's must not be taken for not given).
func TestAgentWarningsOnceAcrossACrash(t *testing.T) {
	state, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, state, sock)
	dir := project(t)
	a := newAgentSetup(t, "prompt,ask,hang")
	id := d.start(append(a.flags, "--timeout", "60s", "--warn-before", "57s", "--waiting-timeout", "10s",
		"--on-warning", "echo warned >> warnings.txt", dir, "--", "claude", "-p", "deploy")...)
	warnings := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "warnings.txt"))
		return strings.Count(string(b), "warned\n")
	}
	waitFor(t, 20*time.Second, "the deadline's and the waiting warnings", func() (bool, string) {
		rec := d.agentRecord(id)
		return warnings() == 2 && rec.Warning != nil && rec.Warning.Reason == "waiting", fmt.Sprint(warnings(), rec.Warning)
	})
	d.kill9()
	d = startDaemonAt(t, state, sock)
	// The hooks a second warning would run come at the adoption.
	sleepUntil(time.Now().Add(2 * time.Second))
	if n := warnings(); n != 2 {
		t.Errorf("%d warnings given, want 2: the daemon that adopted the session warned it again", n)
	}
	d.mustCtl("stop", id)
}

// TestAgentCodexInteractiveTurn: an interactive Codex, which no hook tells
// of a prompt, is seen working once its turn starts in its rollout, so a
// turn longer than waiting_timeout is not ended as a wait; its
// conversation is found and recorded.
func TestAgentCodexInteractiveTurn(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	a := newAgentSetup(t, "wait=go,prompt,wait=done,stop,hang")
	id := d.start(append(a.flags, "--waiting-timeout", "8s", dir, "--", "codex")...)
	d.waitAgent(id, "waiting")
	a.cue(t, "go")
	d.waitAgent(id, "working")
	// Longer than waiting_timeout, at work.
	sleepUntil(time.Now().Add(10 * time.Second))
	if rec := d.agentRecord(id); rec.State != "running" || rec.Agent.State != "working" {
		t.Fatalf("an interactive Codex at work past waiting_timeout: session %s, agent %s", rec.State, rec.Agent.State)
	}
	a.cue(t, "done")
	rec := d.waitAgent(id, "waiting")
	if rec.Agent.ConversationID == "" || rec.Agent.Turns != 1 {
		t.Errorf("codex agent = %+v, want its conversation and one turn", rec.Agent)
	}
	d.mustCtl("stop", id)
}
