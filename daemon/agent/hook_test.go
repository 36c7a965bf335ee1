package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookGolden decodes the payloads Claude Code 2.1.328 and Codex 0.169
// gave their hooks (recorded with the real CLIs, paths made neutral) and
// compares the events with testdata/*/events.
func TestHookGolden(t *testing.T) {
	for _, dir := range []struct {
		adapter Adapter
		in, out string
	}{
		{ClaudeCode, "claude/hooks", "claude/events"},
		{Codex, "codex/notify", "codex/events"},
	} {
		files, err := filepath.Glob(filepath.Join("testdata", dir.in, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no payloads in testdata/%s: %v", dir.in, err)
		}
		for _, f := range files {
			name := filepath.Base(f)
			t.Run(dir.adapter.Name()+"/"+name, func(t *testing.T) {
				payload, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				interactive := strings.Contains(name, "interactive") || dir.adapter == ClaudeCode && !strings.Contains(name, "headless")
				ev, err := dir.adapter.ParseHook(payload, interactive)
				if err != nil {
					t.Fatalf("ParseHook: %v", err)
				}
				if ev.Agent != dir.adapter.Name() || ev.ConversationID == "" || len(ev.Notices) != 0 {
					t.Errorf("event %+v: want the agent, a conversation id and no notices", ev)
				}
				out, err := json.MarshalIndent(ev, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join(dir.out, name), append(out, '\n'))
			})
		}
	}
}

func TestClaudeHookStates(t *testing.T) {
	for _, tc := range []struct {
		file        string
		interactive bool
		state       State
		reason      string
	}{
		{"session-start-startup", true, "", ""},
		{"user-prompt-submit", true, StateWorking, ""},
		{"pre-tool-use", true, StateWorking, ""},
		{"permission-request", true, StateWaiting, "permission: Bash"},
		{"post-tool-use", true, StateWorking, ""},
		{"notification-permission-prompt", true, StateWaiting, "permission: Claude needs your permission"},
		{"notification-idle-prompt", true, StateWaiting, "prompt"},
		{"stop-interactive", true, StateWaiting, "prompt"},
		{"stop-headless", false, StateIdle, ""},
		{"pre-compact", true, StateWorking, ""},
		{"session-end-exit", true, StateIdle, ""},
	} {
		payload, err := os.ReadFile(filepath.Join("testdata", "claude", "hooks", tc.file+".json"))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := ClaudeCode.ParseHook(payload, tc.interactive)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if ev.State != tc.state || ev.WaitingReason != tc.reason {
			t.Errorf("%s: state %q reason %q, want %q %q", tc.file, ev.State, ev.WaitingReason, tc.state, tc.reason)
		}
	}
}

func TestClaudeHookFields(t *testing.T) {
	read := func(name string) Event {
		t.Helper()
		payload, err := os.ReadFile(filepath.Join("testdata", "claude", "hooks", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := ClaudeCode.ParseHook(payload, true)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	start := read("session-start-startup")
	if !start.SessionStarted || start.Source != "startup" || start.ConversationID != "3f0c0e6a-1111-4222-8333-44445555666f" ||
		start.TranscriptPath != "/home/dev/.claude/projects/-home-dev-src-app/3f0c0e6a-1111-4222-8333-44445555666f.jsonl" {
		t.Errorf("SessionStart: %+v", start)
	}
	prompt := read("user-prompt-submit")
	if !prompt.TurnStarted || prompt.Prompt != "do the TOOL thing" || prompt.TurnID == "" {
		t.Errorf("UserPromptSubmit: %+v", prompt)
	}
	stop := read("stop-interactive")
	if !stop.TurnEnded || stop.Reply != "Hello back" || stop.TurnID != prompt.TurnID {
		t.Errorf("Stop: %+v (turn id should match the prompt's %s)", stop, prompt.TurnID)
	}
	end := read("session-end-exit")
	if !end.SessionEnded || end.EndReason != "prompt_input_exit" {
		t.Errorf("SessionEnd: %+v", end)
	}
}

func TestHookBadPayloads(t *testing.T) {
	const id = "3f0c0e6a-1111-4222-8333-444455556666"
	for _, tc := range []struct {
		name    string
		adapter Adapter
		payload string
		err     error
		notice  string
	}{
		{"empty", ClaudeCode, "", ErrBadPayload, ""},
		{"not JSON", ClaudeCode, "hello", ErrBadPayload, ""},
		{"array", ClaudeCode, `["SessionStart"]`, ErrBadPayload, ""},
		{"no event", ClaudeCode, `{"session_id":"` + id + `"}`, ErrBadPayload, ""},
		{"cut before event", ClaudeCode, `{"session_id":"` + id + `","transcript_pa`, ErrBadPayload, ""},
		{"unknown event", ClaudeCode, `{"hook_event_name":"SubagentStop","session_id":"` + id + `"}`, ErrUnknownEvent, ""},
		{"event not a string", ClaudeCode, `{"hook_event_name":42}`, ErrBadPayload, ""},
		{"id not a UUID", ClaudeCode, `{"hook_event_name":"Stop","session_id":"../../etc"}`, nil, "session_id"},
		{"relative transcript", ClaudeCode, `{"hook_event_name":"Stop","transcript_path":"x.jsonl"}`, nil, "not absolute"},
		{"cut after event", ClaudeCode, `{"hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{"file_path":"aaaa`, nil, "cut short"},
		{"cut in the tool's output", ClaudeCode, `{"session_id":"` + id + `","transcript_path":"/t.jsonl","cwd":"/p","hook_event_name":"PostToolUse","tool_name":"Read","tool_response":{"content":"aaaa`, nil, ""},
		{"codex empty", Codex, "", ErrBadPayload, ""},
		{"codex not JSON", Codex, "{", ErrBadPayload, ""},
		{"codex no type", Codex, `{"thread-id":"` + id + `"}`, ErrBadPayload, ""},
		{"codex wrong shape", Codex, `{"type":"agent-turn-complete","input-messages":"x"}`, ErrBadPayload, ""},
		{"codex unknown", Codex, `{"type":"something-new","thread-id":"` + id + `"}`, ErrUnknownEvent, ""},
		{"codex id not a UUID", Codex, `{"type":"agent-turn-complete","thread-id":"t1"}`, nil, "thread-id"},
		{"generic", Generic, `{}`, ErrUnknownEvent, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := tc.adapter.ParseHook([]byte(tc.payload), true)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				if tc.err == ErrUnknownEvent && tc.adapter != Generic && ev.ConversationID != id {
					t.Errorf("unknown event lost the conversation id: %+v", ev)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.notice == "" {
				if len(ev.Notices) != 0 || ev.ConversationID != id || ev.State != StateWorking {
					t.Errorf("event %+v: want it whole, with no notice", ev)
				}
				return
			}
			if len(ev.Notices) != 1 || !strings.Contains(ev.Notices[0], tc.notice) {
				t.Errorf("notices %q, want one about %q", ev.Notices, tc.notice)
			}
		})
	}
}

func TestCodexHookStates(t *testing.T) {
	payload, err := os.ReadFile(filepath.Join("testdata", "codex", "notify", "agent-turn-complete-resumed.json"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Codex.ParseHook(payload, true)
	if err != nil {
		t.Fatal(err)
	}
	if ev.State != StateWaiting || ev.WaitingReason != WaitPrompt || ev.Prompt != "third" || ev.Reply != "Done here" || !ev.TurnEnded {
		t.Errorf("interactive turn end: %+v", ev)
	}
	if ev, _ := Codex.ParseHook(payload, false); ev.State != StateIdle || ev.WaitingReason != "" {
		t.Errorf("headless turn end: %+v", ev)
	}
}

// FuzzClaudeHook feeds Claude Code hook payloads, starting from the real
// ones, to the parser: it must never panic, and what it returns must hold.
func FuzzClaudeHook(f *testing.F) {
	seedDir(f, filepath.Join("testdata", "claude", "hooks"))
	f.Add([]byte(`{"hook_event_name":"Notification","notification_type":"elicitation_dialog","message":"Pick one"}`))
	f.Add([]byte(`{"hook_event_name":"Stop"`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkHook(t, ClaudeCode, payload)
	})
}

// FuzzCodexHook does the same for Codex's notify payloads.
func FuzzCodexHook(f *testing.F) {
	seedDir(f, filepath.Join("testdata", "codex", "notify"))
	f.Add([]byte(`{"type":"approval-requested"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkHook(t, Codex, payload)
	})
}

func seedDir(f *testing.F, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func checkHook(t *testing.T, a Adapter, payload []byte) {
	for _, interactive := range []bool{false, true} {
		ev, err := a.ParseHook(payload, interactive)
		if err != nil {
			if !errors.Is(err, ErrBadPayload) && !errors.Is(err, ErrUnknownEvent) {
				t.Fatalf("error %v is neither ErrBadPayload nor ErrUnknownEvent", err)
			}
			continue
		}
		if ev.ConversationID != "" {
			if _, err := ParseConversationID(ev.ConversationID); err != nil {
				t.Fatalf("conversation id %q passed: %v", ev.ConversationID, err)
			}
		}
		if ev.TranscriptPath != "" && !filepath.IsAbs(ev.TranscriptPath) {
			t.Fatalf("relative transcript path %q passed", ev.TranscriptPath)
		}
		switch ev.State {
		case "", StateWorking, StateWaiting, StateIdle:
		default:
			t.Fatalf("state %q", ev.State)
		}
		if (ev.State == StateWaiting) != (ev.WaitingReason != "") {
			t.Fatalf("state %q with waiting reason %q", ev.State, ev.WaitingReason)
		}
		if len([]rune(ev.Prompt)) > MaxLineText || len([]rune(ev.Reply)) > MaxLineText || strings.Contains(ev.Prompt, "\n") {
			t.Fatalf("prompt or reply not cut to a line: %q %q", ev.Prompt, ev.Reply)
		}
	}
}
