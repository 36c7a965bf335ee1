package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const testSession = "s1x2y3z4"

// connect runs the server in memory for the session and returns an MCP
// client session connected to it.
func connect(t *testing.T, d Daemon, o Options) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	server := NewServer(ctx, d, o)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		cancel()
	})
	return cs
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// callTool calls a tool and returns its text, its structured content
// decoded into out, and whether it is an error result.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any, out any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	if out != nil && !res.IsError {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, data, err)
		}
	}
	return strings.Join(text, "\n"), res.IsError
}

func TestToolsListed(t *testing.T) {
	d := newFakeDaemon()
	d.extendCap = 30 * time.Minute
	cs := connect(t, d, Options{SessionID: testSession})
	want := []string{"checkpoint", "extend", "handoff", "report", "time_remaining"}
	if got := toolNames(t, cs); !slices.Equal(got, want) {
		t.Errorf("tools %q, want %q", got, want)
	}
	res, _ := cs.ListTools(context.Background(), nil)
	for _, tool := range res.Tools {
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("tool %s lacks a description or a schema", tool.Name)
		}
		if tool.Name == "extend" && !strings.Contains(tool.Description, "30m0s") {
			t.Errorf("extend does not say the cap: %q", tool.Description)
		}
	}
	if cs.InitializeResult().Instructions == "" || cs.InitializeResult().ServerInfo.Name != "sessiond" {
		t.Errorf("initialize result %+v", cs.InitializeResult())
	}
}

func TestExtendOffered(t *testing.T) {
	// No allowance: the tool is not offered at all.
	d := newFakeDaemon()
	if got := toolNames(t, connect(t, d, Options{SessionID: testSession})); slices.Contains(got, "extend") {
		t.Errorf("extend offered without agent_may_extend: %q", got)
	}
	// A daemon that does not answer at start: offered, the daemon decides.
	d = newFakeDaemon()
	d.remainingErr = errUnreachable
	cs := connect(t, d, Options{SessionID: testSession})
	res, _ := cs.ListTools(context.Background(), nil)
	i := slices.IndexFunc(res.Tools, func(tool *sdk.Tool) bool { return tool.Name == "extend" })
	if i < 0 || !strings.Contains(res.Tools[i].Description, "The daemon decides") {
		t.Errorf("extend with the daemon away: %v", toolNames(t, cs))
	}
}

func TestTimeRemaining(t *testing.T) {
	d := newFakeDaemon()
	d.extendCap, d.extendUsed = 30*time.Minute, 10*time.Minute
	d.budget = Budget{Tokens: 120000, MaxTokens: 1000000, CostUSD: 1.5, CostKnown: true, MaxCostUSD: 10}
	cs := connect(t, d, Options{SessionID: testSession})
	var out remainingOutput
	text, isErr := callTool(t, cs, "time_remaining", map[string]any{}, &out)
	if isErr {
		t.Fatalf("error: %s", text)
	}
	want := remainingOutput{Message: "1h30m0s left (deadline 2026-11-29T15:30:00Z). Tokens: 120000 of 1000000. Cost: $1.50 of $10.00.", State: "running", Deadline: "2026-11-29T15:30:00Z", WarnAt: "2026-11-29T15:00:00Z", Left: "1h30m0s", SecondsLeft: 5400,
		MayExtend: "20m0s", Tokens: 120000, MaxTokens: 1000000, MaxCostUSD: 10}
	if out.CostUSD == nil || *out.CostUSD != 1.5 {
		t.Errorf("cost %v, want 1.5", out.CostUSD)
	}
	out.CostUSD = nil
	if out != want {
		t.Errorf("output\n got %+v\nwant %+v", out, want)
	}
	if text != "1h30m0s left (deadline 2026-11-29T15:30:00Z). Tokens: 120000 of 1000000. Cost: $1.50 of $10.00." {
		t.Errorf("text %q", text)
	}
	d.mu.Lock()
	d.warned = true
	d.mu.Unlock()
	if text, _ := callTool(t, cs, "time_remaining", nil, nil); !strings.Contains(text, "WARNED: wrap up now") {
		t.Errorf("warned text %q", text)
	}
	if !slices.Equal(d.sessions, []string{testSession, testSession, testSession}) {
		t.Errorf("the daemon was asked about %q", d.sessions)
	}
	// An ended session has no time left, whatever its deadline said.
	d.mu.Lock()
	d.state = "ended"
	d.mu.Unlock()
	out = remainingOutput{}
	if text, _ := callTool(t, cs, "time_remaining", nil, &out); !strings.HasPrefix(text, "This session has ended: no time left. Tokens:") || out.SecondsLeft != 0 || out.Left != "0s" {
		t.Errorf("an ended session: %q, %+v", text, out)
	}
}

func TestReport(t *testing.T) {
	d := newFakeDaemon()
	cs := connect(t, d, Options{SessionID: testSession})
	var out reportOutput
	text, isErr := callTool(t, cs, "report", map[string]any{
		"summary":      "Completed Task #27 (JWT refresh tokens)",
		"next":         []string{"Fix JWT validation in kong-gateway.ts", " Add refresh token tests "},
		"blockers_add": []map[string]any{{"question": "Which OAuth provider for SSO?", "priority": "high"}, {"question": "Staging credentials?"}},
		"plan":         "OAuth 2.0 with JWT", "progress": 68.5, "task": "JWT refresh", "step": "3/5", "status": "in_progress",
	}, &out)
	if isErr {
		t.Fatalf("error: %s", text)
	}
	if len(d.reports) != 1 {
		t.Fatalf("%d reports", len(d.reports))
	}
	r := d.reports[0]
	if r.Summary != "Completed Task #27 (JWT refresh tokens)" || !slices.Equal(r.Next, []string{"Fix JWT validation in kong-gateway.ts", "Add refresh token tests"}) ||
		len(r.BlockersAdd) != 2 || r.BlockersAdd[0].Priority != "high" || r.Plan != "OAuth 2.0 with JWT" || r.Progress == nil || *r.Progress != 68.5 ||
		r.Task != "JWT refresh" || r.StepCurrent != 3 || r.StepTotal != 5 || r.Status != "in_progress" {
		t.Errorf("report %+v", r)
	}
	if len(out.Blockers) != 2 || out.Blockers[0].ID != 1 || out.Blockers[1].Question != "Staging credentials?" || len(out.Recorded) != 8 {
		t.Errorf("output %+v", out)
	}
	if !strings.Contains(text, "2 open blockers") {
		t.Errorf("text %q", text)
	}
	// Resolve one by id.
	text, isErr = callTool(t, cs, "report", map[string]any{"blockers_resolve": []int{1}}, &out)
	if isErr || len(out.Blockers) != 1 || out.Blockers[0].ID != 2 {
		t.Errorf("resolve: %s %+v", text, out)
	}
	// A daemon refusal is the tool's error, with the daemon's words.
	text, isErr = callTool(t, cs, "report", map[string]any{"blockers_resolve": []int{9}}, nil)
	if !isErr || !strings.Contains(text, "no open blocker 9") {
		t.Errorf("resolve unknown: %v %q", isErr, text)
	}
}

// TestReportBadInput: arguments of the wrong shape are refused before the
// daemon hears of them, with a message naming what is wrong.
func TestReportBadInput(t *testing.T) {
	d := newFakeDaemon()
	cs := connect(t, d, Options{SessionID: testSession})
	long := strings.Repeat("x", maxSummary+1)
	for _, tc := range []struct {
		args any
		want string
	}{
		{map[string]any{}, "nothing to report"},
		{map[string]any{"status": "done"}, "status"},
		{map[string]any{"progress": 150}, "progress"},
		{map[string]any{"progress": "half"}, "progress"},
		{map[string]any{"step": "3-5"}, "step"},
		{map[string]any{"step": "6/5"}, "step"},
		{map[string]any{"step": "1/0"}, "step"},
		{map[string]any{"summary": long}, "summary"},
		{map[string]any{"next": []string{"a", "b", "c", "d", "e", "f"}}, "next"},
		{map[string]any{"next": []string{"  "}}, "next[0] is empty"},
		{map[string]any{"blockers_add": []map[string]any{{"question": " "}}}, "question is empty"},
		{map[string]any{"blockers_add": []map[string]any{{"priority": "high"}}}, "question"},
		{map[string]any{"blockers_add": []map[string]any{{"question": "q", "priority": "urgent"}}}, "priority"},
		{map[string]any{"blockers_resolve": []int{0}}, "blockers_resolve"},
		{map[string]any{"summary": 42}, "summary"},
		{map[string]any{"unknown_field": "x", "summary": "ok"}, "unknown_field"},
		{"not an object", ""},
	} {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "report", Arguments: tc.args})
		if err != nil {
			// A JSON-RPC error (invalid params) is as good as a tool error,
			// as long as it says what is wrong.
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: error %v does not name %q", tc.args, err, tc.want)
			}
			continue
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text += tc.Text
			}
		}
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%v: result %v %q, want an error naming %q", tc.args, res.IsError, text, tc.want)
		}
	}
	if len(d.reports) != 0 {
		t.Errorf("the daemon got %d bad reports", len(d.reports))
	}
}

func TestCheckpoint(t *testing.T) {
	d := newFakeDaemon()
	cs := connect(t, d, Options{SessionID: testSession})
	var out checkpointOutput
	text, isErr := callTool(t, cs, "checkpoint", nil, &out)
	if isErr || out.ID != d.checkpoint.ID || out.FilesChanged != 3 || !strings.Contains(text, "3 files changed") {
		t.Errorf("checkpoint: %v %q %+v", isErr, text, out)
	}
	d.mu.Lock()
	d.checkpoint = Checkpoint{Skipped: "nothing changed since checkpoint 5d41402a"}
	d.mu.Unlock()
	out = checkpointOutput{}
	text, isErr = callTool(t, cs, "checkpoint", nil, &out)
	if isErr || out.ID != "" || text != "No checkpoint taken: nothing changed since checkpoint 5d41402a" {
		t.Errorf("nothing changed: %v %q %+v", isErr, text, out)
	}
}

func TestHandoff(t *testing.T) {
	d := newFakeDaemon()
	cs := connect(t, d, Options{SessionID: testSession})
	var out handoffOutput
	text, isErr := callTool(t, cs, "handoff", nil, &out)
	if isErr || out.Previous != nil || text != "This is the project's first session under sessiond." {
		t.Errorf("first session: %v %q %+v", isErr, text, out)
	}
	d.mu.Lock()
	d.briefing = Briefing{
		Previous: &Handoff{SessionID: "p1", EndedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), EndReason: "timeout",
			Summary: "Half of the refresh tokens", Warnings: []string{"uncommitted changes in 2 files"}, RecommendedNextSteps: []string{"finish the tests"},
			ConversationID: "3f0c0e6a-1111-4222-8333-444455556666"},
		NextTask:    &Task{ID: "28", Description: "Rate limiting", Priority: "high"},
		NextActions: []string{"Fix JWT validation"},
		Blockers:    []Blocker{{ID: 5, Question: "Which provider?", Priority: "high"}},
		ProgressPct: 67.5, TasksDone: 27, TasksTotal: 40,
	}
	d.mu.Unlock()
	text, isErr = callTool(t, cs, "handoff", nil, &out)
	if isErr {
		t.Fatal(text)
	}
	if out.Previous == nil || out.Previous.EndReason != "timeout" || out.Previous.EndedAt != "2026-11-29T12:00:00Z" || out.Previous.ConversationID == "" ||
		out.NextTask == nil || out.NextTask.ID != "28" || len(out.Blockers) != 1 || out.TasksTotal != 40 {
		t.Errorf("output %+v", out)
	}
	for _, want := range []string{"ended: timeout", "Warning: uncommitted changes in 2 files", "Next task: #28 Rate limiting", "Next action 1: Fix JWT validation"} {
		if !strings.Contains(text, want) {
			t.Errorf("text %q lacks %q", text, want)
		}
	}
}

func TestExtend(t *testing.T) {
	d := newFakeDaemon()
	d.extendCap = 30 * time.Minute
	cs := connect(t, d, Options{SessionID: testSession})
	var out extendOutput
	text, isErr := callTool(t, cs, "extend", map[string]any{"by": "20m"}, &out)
	if isErr || out.Deadline != "2026-11-29T15:50:00Z" || out.Left != "1h50m0s" || out.MayExtend != "10m0s" {
		t.Errorf("extend 20m: %v %q %+v", isErr, text, out)
	}
	// Beyond the cap: the daemon refuses, and the agent is told why.
	text, isErr = callTool(t, cs, "extend", map[string]any{"by": "15m"}, nil)
	if !isErr || !strings.Contains(text, "extension refused") || !strings.Contains(text, "10m0s") {
		t.Errorf("beyond the cap: %v %q", isErr, text)
	}
	for _, by := range []any{"", "soon", "-5m", "0s", 30} {
		if text, isErr := callTool(t, cs, "extend", map[string]any{"by": by}, nil); !isErr || !strings.Contains(text, "by") {
			t.Errorf("by %v: %v %q", by, isErr, text)
		}
	}
	if !d.deadline.Equal(time.Date(2026, 11, 29, 15, 50, 0, 0, time.UTC)) {
		t.Errorf("deadline moved to %v", d.deadline)
	}
}

func TestNoSession(t *testing.T) {
	d := newFakeDaemon()
	cs := connect(t, d, Options{})
	for _, name := range []string{"time_remaining", "checkpoint", "handoff"} {
		text, isErr := callTool(t, cs, name, nil, nil)
		if !isErr || !strings.Contains(text, "SESSIOND_SESSION_ID is not set") {
			t.Errorf("%s outside a session: %v %q", name, isErr, text)
		}
	}
	if text, isErr := callTool(t, cs, "report", map[string]any{"summary": "x"}, nil); !isErr || !strings.Contains(text, "not running in a sessiond session") {
		t.Errorf("report outside a session: %v %q", isErr, text)
	}
	if len(d.sessions) != 0 {
		t.Errorf("the daemon was called outside a session: %q", d.sessions)
	}
}

func TestDaemonAway(t *testing.T) {
	d := newFakeDaemon()
	d.remainingErr = errUnreachable
	cs := connect(t, d, Options{SessionID: testSession})
	text, isErr := callTool(t, cs, "time_remaining", nil, nil)
	if !isErr || text != "time remaining: "+errUnreachable.Error() {
		t.Errorf("daemon away: %v %q", isErr, text)
	}
}

func TestCallTimeout(t *testing.T) {
	d := newFakeDaemon()
	d.blockCheckpoint = true
	cs := connect(t, d, Options{SessionID: testSession, CallTimeout: 50 * time.Millisecond})
	text, isErr := callTool(t, cs, "checkpoint", nil, nil)
	if !isErr || !strings.Contains(text, "deadline exceeded") {
		t.Errorf("slow daemon: %v %q", isErr, text)
	}
	if err := <-d.checkpointDone; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the daemon call ended with %v", err)
	}
}
