package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	agenttest.Cleanup()
	if recorder.dir != "" {
		os.RemoveAll(recorder.dir)
	}
	os.Exit(code)
}

// recorder is the recording stand-in of sessionctl (testdata/sessionctl),
// built once.
var recorder struct {
	once sync.Once
	dir  string
	err  error
}

func sessionctlStandIn(t *testing.T) string {
	t.Helper()
	recorder.once.Do(func() {
		recorder.dir, recorder.err = os.MkdirTemp("", "sessiond-sessionctl-")
		if recorder.err != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(recorder.dir, "sessionctl"), "./testdata/sessionctl").CombinedOutput()
		if err != nil {
			recorder.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if recorder.err != nil {
		t.Fatalf("build the sessionctl stand-in: %v", recorder.err)
	}
	return filepath.Join(recorder.dir, "sessionctl")
}

// record is one line of the sessionctl stand-in's record.
type record struct {
	Kind       string   `json:"kind"`
	Agent      string   `json:"agent"`
	Payload    string   `json:"payload"`
	Method     string   `json:"method"`
	Session    string   `json:"session"`
	SessionEnv string   `json:"session_env"`
	SocketEnv  string   `json:"socket_env"`
	Argv       []string `json:"argv"`
	Error      string   `json:"error"`
}

// readRecord reads the calls recorded so far. The recorder may be writing
// its next line meanwhile: a last line without its newline is not whole
// yet, and is left for the next read.
func readRecord(t *testing.T, sessionctl, session string) []record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(filepath.Dir(sessionctl), "log-"+session+".jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	var out []record
	for line := range bytes.Lines(data) {
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("record line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// hookEvents parses every recorded hook payload with the adapter.
func hookEvents(t *testing.T, a Adapter, recs []record, interactive bool) []Event {
	t.Helper()
	var out []Event
	for _, r := range recs {
		if r.Kind != "hook" {
			continue
		}
		ev, err := a.ParseHook([]byte(r.Payload), interactive)
		if err != nil {
			t.Fatalf("recorded payload %s: %v", r.Payload, err)
		}
		out = append(out, ev)
	}
	return out
}

var sessionSeq atomic.Int64

// standInLaunch is a Launch for the stand-in agents: its own home, the
// recording sessionctl, a fresh session id.
func standInLaunch(t *testing.T, argv ...string) Launch {
	l := testLaunch(t, argv...)
	l.SessionID = fmt.Sprintf("t%d%d", os.Getpid(), sessionSeq.Add(1))
	l.Sessionctl = sessionctlStandIn(t)
	l.MCP = true
	return l
}

// start runs a plan's command in the project, as sessiond would.
func start(t *testing.T, l Launch, p Plan, env ...string) (*exec.Cmd, string) {
	t.Helper()
	bin := agenttest.Build(t)
	log := filepath.Join(t.TempDir(), "agent.log")
	// exec.Command looks a bare name up in this process's PATH; the
	// session's PATH has the stand-ins first.
	exe := p.Argv[0]
	if !strings.Contains(exe, "/") {
		exe = filepath.Join(bin, exe)
	}
	cmd := exec.Command(exe, p.Argv[1:]...)
	cmd.Dir = l.ProjectDir
	cmd.Env = append(slices.Clone(l.Env), "PATH="+agenttest.Path(bin), "FAKEAGENT_LOG="+log,
		"SESSIOND_SESSION_ID="+l.SessionID, "SESSIOND_SOCKET="+l.Socket)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("agent stderr: %s", stderr.String())
		}
	})
	return cmd, log
}

func wait(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("the agent did not end in 60s")
	}
	return cmd.ProcessState.ExitCode()
}

// waitFor waits until cond holds, checking every 10 ms, for at most 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func states(evs []Event) string {
	var s []string
	for _, e := range evs {
		st := string(e.State)
		if st == "" {
			st = "-"
		}
		if e.WaitingReason != "" {
			st += "(" + e.WaitingReason + ")"
		}
		s = append(s, e.Hook+":"+st)
	}
	return strings.Join(s, " ")
}

// TestStandInClaudeHeadless runs the stand-in Claude Code on the command
// line the adapter builds: its hooks reach sessionctl with the conversation
// sessiond chose, each payload parses to the state the rules give, the MCP
// server answers a tool call, and the transcript's usage is read.
func TestStandInClaudeHeadless(t *testing.T) {
	l := standInLaunch(t, "claude", "-p", "fix the failing test")
	l.Budget.MaxCostUSD = 5
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	cmd, log := start(t, l, p, "FAKEAGENT_SCRIPT=prompt,tool=Edit,mcp=time_remaining,mcp=report:{\"summary\":\"half done\"},stop,exit",
		"STANDIN_CONTEXT=sessiond: this session will be stopped in 29m59s")
	if code := wait(t, cmd); code != 0 {
		t.Fatalf("exit %d; log %v", code, agenttest.ReadLog(t, log))
	}
	recs := readRecord(t, l.Sessionctl, l.SessionID)
	evs := hookEvents(t, ClaudeCode, recs, p.Interactive)
	want := "SessionStart:- UserPromptSubmit:working PreToolUse:working PostToolUse:working Stop:idle SessionEnd:idle"
	if got := states(evs); got != want {
		t.Errorf("hooks\n got %s\nwant %s", got, want)
	}
	for _, e := range evs {
		if e.ConversationID != p.ConversationID || e.TranscriptPath != p.TranscriptPath {
			t.Errorf("%s: conversation %s transcript %s, want %s %s", e.Hook, e.ConversationID, e.TranscriptPath, p.ConversationID, p.TranscriptPath)
		}
	}
	if evs[1].Prompt != "fix the failing test" || evs[4].Reply == "" || evs[4].TurnID != evs[1].TurnID {
		t.Errorf("turn: %+v / %+v", evs[1], evs[4])
	}
	if c := agenttest.Find(agenttest.ReadLog(t, log), "context"); len(c) != 1 || c[0].Hook != "PostToolUse" || !strings.HasPrefix(c[0].Text, "sessiond: this session") {
		t.Errorf("the hook's context did not reach the agent: %+v", c)
	}
	mcp := agenttest.Find(agenttest.ReadLog(t, log), "mcp")
	if len(mcp) != 2 || mcp[0].IsError || !strings.Contains(mcp[0].Text, "left (deadline") || mcp[1].IsError || !strings.Contains(mcp[1].Text, "Recorded summary") {
		t.Errorf("MCP calls: %+v", mcp)
	}
	var methods []string
	for _, r := range recs {
		if r.Kind == "mcp_call" {
			methods = append(methods, r.Method+":"+r.Session)
			if r.SessionEnv != l.SessionID || r.SocketEnv != l.Socket {
				t.Errorf("the MCP server got session %q socket %q", r.SessionEnv, r.SocketEnv)
			}
		}
	}
	// The server asks Remaining once at start (for the extend cap).
	if want := []string{"Remaining:" + l.SessionID, "Remaining:" + l.SessionID, "Report:" + l.SessionID}; !slices.Equal(methods, want) {
		t.Errorf("daemon calls %q, want %q", methods, want)
	}
	tr := ClaudeCode.Transcript(p.TranscriptPath, TranscriptOptions{})
	u, err := tr.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{InputTokens: 50, OutputTokens: 30, CacheReadTokens: 100, CacheWriteTokens: 200, CostUSD: 0.02, CostKnown: true, EstimatedUSD: 0.00138}); u.Usage != want {
		t.Errorf("usage %+v, want %+v", u.Usage, want)
	}
	c, err := ClaudeCode.Locate(context.Background(), Query{ProjectDir: l.ProjectDir, Since: time.Now().Add(-time.Minute), Env: l.Env})
	if err != nil || c.ID != p.ConversationID || c.TranscriptPath != p.TranscriptPath {
		t.Errorf("Locate: %+v, %v", c, err)
	}
}

// TestStandInClaudeInteractive: a permission prompt is waiting with its
// reason, a granted permission is working again, the end of a turn is
// waiting for the next prompt, and a stop signal ends the agent with its
// SessionEnd hook.
func TestStandInClaudeInteractive(t *testing.T) {
	l := standInLaunch(t, "claude", "add the tests")
	l.TTY = true
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Interactive || p.InitialState != StateWorking {
		t.Fatalf("plan %+v", p)
	}
	control := t.TempDir()
	cmd, _ := start(t, l, p, "FAKEAGENT_SCRIPT=prompt,ask=Bash,stop,hang", "FAKEAGENT_DIR="+control)
	last := func() Event {
		evs := hookEvents(t, ClaudeCode, readRecord(t, l.Sessionctl, l.SessionID), true)
		if len(evs) == 0 {
			return Event{}
		}
		return evs[len(evs)-1]
	}
	waitFor(t, "the permission prompt", func() bool { return last().Hook == "Notification" })
	if e := last(); e.State != StateWaiting || e.WaitingReason != "permission: Claude needs your permission" {
		t.Errorf("at the prompt: %+v", e)
	}
	writeFile(t, filepath.Join(control, "grant"), "")
	waitFor(t, "the end of the turn", func() bool { return last().Hook == "Stop" })
	if e := last(); e.State != StateWaiting || e.WaitingReason != WaitPrompt {
		t.Errorf("after the turn: %+v", e)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := wait(t, cmd); code != 143 {
		t.Errorf("exit %d after SIGTERM", code)
	}
	want := "SessionStart:- UserPromptSubmit:working PreToolUse:working PermissionRequest:waiting(permission: Bash) Notification:waiting(permission: Claude needs your permission) PostToolUse:working Stop:waiting(prompt) SessionEnd:idle"
	if got := states(hookEvents(t, ClaudeCode, readRecord(t, l.Sessionctl, l.SessionID), true)); got != want {
		t.Errorf("hooks\n got %s\nwant %s", got, want)
	}
}

// TestStandInClaudeResume: a crashed conversation resumes under the same
// id, its transcript growing, its usage and cost going on; one whose
// transcript is gone starts afresh with a notice.
func TestStandInClaudeResume(t *testing.T) {
	l := standInLaunch(t, "claude", "-p", "continue the task")
	p1, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := start(t, l, p1, "FAKEAGENT_SCRIPT=prompt,tool,crash")
	if code := wait(t, cmd); code != -1 {
		t.Fatalf("exit %d, want killed", code)
	}
	tr := ClaudeCode.Transcript(p1.TranscriptPath, TranscriptOptions{})
	u, err := tr.Read(context.Background())
	if err != nil || u.Usage.InputTokens != 25 || u.Usage.CostKnown {
		t.Fatalf("after the crash: %+v, %v", u.Usage, err)
	}
	l.Resume = p1.ConversationID
	p2, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if !p2.Resumed || p2.ConversationID != p1.ConversationID || p2.TranscriptPath != p1.TranscriptPath || !slices.Contains(p2.Argv, "--resume") || slices.Contains(p2.Argv, "--session-id") {
		t.Fatalf("resume plan %+v", p2)
	}
	before := len(readRecord(t, l.Sessionctl, l.SessionID))
	cmd, _ = start(t, l, p2)
	if code := wait(t, cmd); code != 0 {
		t.Fatalf("resumed run: exit %d", code)
	}
	evs := hookEvents(t, ClaudeCode, readRecord(t, l.Sessionctl, l.SessionID)[before:], false)
	if len(evs) == 0 || evs[0].Source != "resume" || evs[0].ConversationID != p1.ConversationID {
		t.Errorf("resumed SessionStart: %+v", evs)
	}
	// The crashed run's cost is lost, as with the real CLI: it records its
	// cost when it exits.
	u, err = tr.Read(context.Background())
	if err != nil || u.Usage.InputTokens != 75 || !u.Usage.CostKnown || u.Usage.CostUSD != 0.02 {
		t.Errorf("after the resumed run: %+v, %v", u.Usage, err)
	}
	// The transcript gone: a new conversation, and a notice saying why.
	if err := os.Remove(p1.TranscriptPath); err != nil {
		t.Fatal(err)
	}
	p3, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if p3.Resumed || p3.ConversationID == p1.ConversationID || len(p3.Notices) != 1 || !strings.Contains(p3.Notices[0], "no transcript") {
		t.Fatalf("resume of a gone conversation: %+v", p3)
	}
	cmd, _ = start(t, l, p3)
	if code := wait(t, cmd); code != 0 {
		t.Errorf("fresh run: exit %d", code)
	}
}

// TestStandInClaudeBudget: --max-budget-usd, added for a -p run with a cost
// cap, makes the agent stop itself at the cap.
func TestStandInClaudeBudget(t *testing.T) {
	l := standInLaunch(t, "claude", "-p", "spend")
	l.Budget.MaxCostUSD = 0.025
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	cmd, log := start(t, l, p, "FAKEAGENT_SCRIPT=prompt,tool,tool,tool,tool,stop,exit")
	if code := wait(t, cmd); code != 1 {
		t.Errorf("exit %d, want 1 (budget)", code)
	}
	if b := agenttest.Find(agenttest.ReadLog(t, log), "budget_exceeded"); len(b) != 1 {
		t.Errorf("budget_exceeded entries: %v", b)
	}
}

// TestStandInCodexExec runs the stand-in Codex on the adapter's command
// line: the notify program gets the turn's payload, Locate finds the
// conversation before any hook, the rollout's usage and turns are read, and
// the MCP server, started by Codex with only the environment its entry
// gives, serves the session.
func TestStandInCodexExec(t *testing.T) {
	l := standInLaunch(t, "codex", "exec", "--skip-git-repo-check", "fix the failing test")
	writeFile(t, filepath.Join(l.home(), ".codex", "config.toml"), "notify = [\"/bin/sh\", \"-c\", \"echo \\\"$0\\\" >> "+filepath.Join(l.ProjectDir, "user-notify.log")+"\"]\n")
	since := time.Now()
	p, err := Codex.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	cmd, log := start(t, l, p, "FAKEAGENT_SCRIPT=prompt,mcp=time_remaining,tool,stop,exit")
	if code := wait(t, cmd); code != 0 {
		t.Fatalf("exit %d; log %v", code, agenttest.ReadLog(t, log))
	}
	recs := readRecord(t, l.Sessionctl, l.SessionID)
	evs := hookEvents(t, Codex, recs, p.Interactive)
	if len(evs) != 1 || !evs[0].TurnEnded || evs[0].State != StateIdle || evs[0].Prompt != "fix the failing test" {
		t.Fatalf("notify events %+v", evs)
	}
	conv, err := Codex.Locate(context.Background(), Query{ProjectDir: l.ProjectDir, Since: since, Env: l.Env})
	if err != nil || conv.ID != evs[0].ConversationID {
		t.Fatalf("Locate: %+v, %v (notify said %s)", conv, err, evs[0].ConversationID)
	}
	u, err := Codex.Transcript(conv.TranscriptPath, TranscriptOptions{}).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{InputTokens: 50, OutputTokens: 30, CacheReadTokens: 100, CacheWriteTokens: 200, EstimatedUSD: 0.000375}); u.Usage != want {
		t.Errorf("usage %+v, want %+v", u.Usage, want)
	}
	if got := states(u.Events); got != "session_meta:- task_started:working task_complete:idle" {
		t.Errorf("rollout events %s", got)
	}
	// The user's own notify program still ran, with the same payload.
	data, err := os.ReadFile(filepath.Join(l.ProjectDir, "user-notify.log"))
	if err != nil || !strings.Contains(string(data), `"type":"agent-turn-complete"`) {
		t.Errorf("the user's notify program: %q, %v", data, err)
	}
	mcp := agenttest.Find(agenttest.ReadLog(t, log), "mcp")
	if len(mcp) != 1 || mcp[0].IsError || !strings.Contains(mcp[0].Text, "left (deadline") {
		t.Errorf("MCP call: %+v", mcp)
	}
	for _, r := range recs {
		if r.Kind == "mcp_call" && (r.SessionEnv != l.SessionID || r.SocketEnv != l.Socket) {
			t.Errorf("the MCP server got session %q socket %q", r.SessionEnv, r.SocketEnv)
		}
	}
}

// TestStandInCodexResume resumes a Codex conversation by the id Locate
// found; the rollout's total goes on.
func TestStandInCodexResume(t *testing.T) {
	l := standInLaunch(t, "codex", "exec", "first")
	since := time.Now()
	p, err := Codex.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := start(t, l, p)
	if code := wait(t, cmd); code != 0 {
		t.Fatalf("exit %d", code)
	}
	conv, err := Codex.Locate(context.Background(), Query{ProjectDir: l.ProjectDir, Since: since, Env: l.Env})
	if err != nil {
		t.Fatal(err)
	}
	l.Resume = conv.ID
	p2, err := Codex.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if !p2.Resumed || p2.TranscriptPath != conv.TranscriptPath {
		t.Fatalf("resume plan %+v", p2)
	}
	cmd, _ = start(t, l, p2)
	if code := wait(t, cmd); code != 0 {
		t.Fatalf("resumed: exit %d", code)
	}
	evs := hookEvents(t, Codex, readRecord(t, l.Sessionctl, l.SessionID), false)
	if len(evs) != 2 || evs[1].ConversationID != conv.ID || evs[1].Prompt != "first" {
		t.Errorf("notify events after the resume: %+v", evs)
	}
	u, err := Codex.Transcript(conv.TranscriptPath, TranscriptOptions{}).Read(context.Background())
	if err != nil || u.Usage.InputTokens != 100 {
		t.Errorf("usage after two runs: %+v, %v", u.Usage, err)
	}
}
