package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
)

// fakeAnthropic stands in for the Anthropic Messages API on loopback, the
// one thing this machine cannot provide: the first request of the test's
// conversation gets a call of the sessiond MCP tool time_remaining, the one
// with its result a closing text. Each response reports input 25, output 15,
// cache read 50 and cache write 100 tokens.
type fakeAnthropic struct {
	mu         sync.Mutex
	n          int
	toolResult string
	sawTool    bool
}

const realTestPrompt = "SESSIOND-REAL-TEST: how long do we have?"

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if !strings.HasPrefix(r.URL.Path, "/v1/messages") || strings.Contains(r.URL.Path, "count_tokens") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens":10}`)
		return
	}
	f.mu.Lock()
	f.n++
	id := fmt.Sprintf("msg_test%03d", f.n)
	text := string(body)
	ours := strings.Contains(text, "SESSIOND-REAL-TEST")
	if strings.Contains(text, `"mcp__sessiond__time_remaining"`) {
		f.sawTool = true
	}
	var reply []map[string]any
	stop := "end_turn"
	switch {
	case ours && strings.Contains(text, "toolu_sessiond01"):
		f.toolResult = toolResultText(body)
		reply = []map[string]any{{"type": "text", "text": "We have time."}}
	case ours:
		reply = []map[string]any{{"type": "tool_use", "id": "toolu_sessiond01", "name": "mcp__sessiond__time_remaining", "input": map[string]any{}}}
		stop = "tool_use"
	default:
		reply = []map[string]any{{"type": "text", "text": "ok"}}
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v map[string]any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], data)
	}
	send(map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 25, "output_tokens": 1, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 50}}})
	for i, block := range reply {
		if block["type"] == "tool_use" {
			send(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
			send(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": "{}"}})
		} else {
			send(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			send(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": block["text"]}})
		}
		send(map[string]any{"type": "content_block_stop", "index": i})
	}
	send(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 15}})
	send(map[string]any{"type": "message_stop"})
}

// toolResultText is the text of the tool_result block of a request.
func toolResultText(body []byte) string {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				return string(b.Content)
			}
		}
	}
	return ""
}

// TestRealClaudeCode runs the real Claude Code from npm, with a dummy key
// and a stand-in API on loopback, on the command line the adapter builds:
// its SessionStart hook gets the conversation id sessiond chose and the
// transcript path, every installed hook runs with a payload the adapter
// reads, the model's call of an MCP tool reaches sessionctl's MCP server
// and its answer the model, and the transcript's usage is what the API
// reported.
func TestRealClaudeCode(t *testing.T) {
	claude := agenttest.RealClaude(t)
	api := &fakeAnthropic{}
	srv := httptest.NewServer(api)
	defer srv.Close()

	l := standInLaunch(t, claude, "--allowedTools", "mcp__sessiond__time_remaining", "-p", realTestPrompt)
	l.Budget.MaxCostUSD = 5
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Argv[0], p.Argv[1:]...)
	cmd.Dir = l.ProjectDir
	cmd.Env = append(l.Env,
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"ANTHROPIC_API_KEY=sk-ant-test-dummy-key",
		"ANTHROPIC_BASE_URL="+srv.URL,
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		// Load MCP tools at once rather than through tool search, so the
		// stand-in API sees them in the first request.
		"ENABLE_TOOL_SEARCH=false",
		"SESSIOND_SESSION_ID="+l.SessionID,
		"SESSIOND_SOCKET="+l.Socket,
	)
	started := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("claude ran %s: %s", time.Since(started).Round(10*time.Millisecond), strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("claude %q: %v", p.Argv, err)
	}

	recs := readRecord(t, l.Sessionctl, l.SessionID)
	evs := hookEvents(t, ClaudeCode, recs, p.Interactive)
	if len(evs) == 0 || evs[0].Hook != "SessionStart" {
		t.Fatalf("no SessionStart hook: %s", states(evs))
	}
	if evs[0].ConversationID != p.ConversationID || evs[0].TranscriptPath != p.TranscriptPath || evs[0].Source != "startup" {
		t.Errorf("SessionStart: conversation %s transcript %s source %s\nwant %s %s", evs[0].ConversationID, evs[0].TranscriptPath, evs[0].Source, p.ConversationID, p.TranscriptPath)
	}
	want := "SessionStart:- UserPromptSubmit:working PreToolUse:working PostToolUse:working Stop:idle SessionEnd:idle"
	if got := states(evs); got != want {
		t.Errorf("hooks\n got %s\nwant %s", got, want)
	}
	for _, e := range evs {
		if e.ConversationID != p.ConversationID || len(e.Notices) != 0 {
			t.Errorf("%s: conversation %s, notices %q", e.Hook, e.ConversationID, e.Notices)
		}
	}
	if len(evs) > 2 && evs[2].Tool != "mcp__sessiond__time_remaining" {
		t.Errorf("PreToolUse tool %q", evs[2].Tool)
	}
	api.mu.Lock()
	sawTool, result := api.sawTool, api.toolResult
	api.mu.Unlock()
	if !sawTool {
		t.Error("the API never saw the sessiond MCP tools offered")
	}
	if !strings.Contains(result, "left (deadline") {
		t.Errorf("the tool result the model got: %q", result)
	}
	u, err := ClaudeCode.Transcript(p.TranscriptPath, TranscriptOptions{}).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if u.Usage.InputTokens != 50 || u.Usage.OutputTokens != 30 || u.Usage.CacheReadTokens != 100 || u.Usage.CacheWriteTokens != 200 || !u.Usage.CostKnown {
		t.Errorf("transcript usage %+v, want 2 requests of 25/15/50/100 and a cost", u.Usage)
	}
	if len(u.Notices) != 0 {
		t.Errorf("transcript notices %q", u.Notices)
	}
}
