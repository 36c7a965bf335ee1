package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestClaudePrepareFresh(t *testing.T) {
	l := testLaunch(t, "claude", "--model", "opus", "fix the failing test")
	l.MCP, l.TTY = true, true
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseConversationID(p.ConversationID); err != nil {
		t.Fatalf("conversation id %q: %v", p.ConversationID, err)
	}
	settings := filepath.Join(l.SessionDir, ClaudeSettingsFile)
	mcp := filepath.Join(l.SessionDir, ClaudeMCPFile)
	want := []string{"claude", "--mcp-config=" + mcp, "--settings", settings, "--session-id", p.ConversationID, "--model", "opus", "fix the failing test"}
	if !slices.Equal(p.Argv, want) {
		t.Errorf("argv\n got %q\nwant %q", p.Argv, want)
	}
	if !p.Integrated || !p.Interactive || p.InitialState != StateWorking || p.Resumed {
		t.Errorf("plan %+v: want integrated, interactive, working (a prompt was given), not resumed", p)
	}
	wantTranscript := filepath.Join(l.home(), ".claude", "projects", claudeProjectKey(l.ProjectDir), p.ConversationID+".jsonl")
	if p.TranscriptPath != wantTranscript {
		t.Errorf("transcript %s, want %s", p.TranscriptPath, wantTranscript)
	}
	if !slices.Equal(p.Files, []string{settings, mcp}) {
		t.Errorf("files %q", p.Files)
	}
	for _, f := range p.Files {
		if m := fileMode(t, f); m != 0o600 {
			t.Errorf("%s has mode %o, want 600", f, m)
		}
	}
	if m := fileMode(t, l.SessionDir); m != 0o700 {
		t.Errorf("session dir has mode %o, want 700", m)
	}
	names := map[string]string{l.SessionDir: "$SESSION_DIR", l.Socket: "$SOCKET"}
	for _, f := range p.Files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, filepath.Join("claude", "prepared", filepath.Base(f)), placeholders(data, names))
	}
}

func TestClaudePrepareHeadless(t *testing.T) {
	l := testLaunch(t, "claude", "-p", "go on", "--output-format", "json")
	l.Budget.MaxCostUSD = 2.5
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude", "--settings", filepath.Join(l.SessionDir, ClaudeSettingsFile), "--session-id", p.ConversationID, "--max-budget-usd", "2.5", "-p", "go on", "--output-format", "json"}
	if !slices.Equal(p.Argv, want) {
		t.Errorf("argv\n got %q\nwant %q", p.Argv, want)
	}
	if p.Interactive || p.InitialState != StateWorking {
		t.Errorf("plan %+v: want headless, working", p)
	}
	// A tty does not make a -p run interactive.
	l.TTY = true
	if p, _ := ClaudeCode.Prepare(context.Background(), l); p.Interactive {
		t.Error("-p on a tty is interactive")
	}
}

func TestClaudePrepareInteractiveWithoutPrompt(t *testing.T) {
	l := testLaunch(t, "claude")
	l.TTY = true
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if p.InitialState != StateWaiting || p.InitialWaiting != WaitPrompt {
		t.Errorf("initial %s %q, want waiting for the prompt", p.InitialState, p.InitialWaiting)
	}
}

func TestClaudePrepareKeepsUsersConversationFlags(t *testing.T) {
	const id = "3f0c0e6a-1111-4222-8333-444455556666"
	for _, tc := range []struct {
		name   string
		args   []string
		wantID string
	}{
		{"own session id", []string{"--session-id", id, "-p", "x"}, id},
		{"resume by id", []string{"--resume", id, "-p", "x"}, id},
		{"resume by id, short", []string{"-r", id}, id},
		{"resume by name", []string{"--resume", "my-feature", "-p", "x"}, ""},
		{"resume forked", []string{"--resume", id, "--fork-session", "-p", "x"}, ""},
		{"continue", []string{"--continue", "-p", "x"}, ""},
		{"picker", []string{"--resume"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLaunch(t, append([]string{"claude"}, tc.args...)...)
			p, err := ClaudeCode.Prepare(context.Background(), l)
			if err != nil {
				t.Fatal(err)
			}
			if p.ConversationID != tc.wantID {
				t.Errorf("conversation %q, want %q", p.ConversationID, tc.wantID)
			}
			n := 0
			for _, a := range p.Argv {
				if a == "--session-id" {
					n++
				}
			}
			if want := strings.Count(strings.Join(tc.args, " "), "--session-id"); n != want {
				t.Errorf("argv %q has %d --session-id, want %d (sessiond adds none)", p.Argv, n, want)
			}
			if !slices.Equal(p.Argv[3:], tc.args) {
				t.Errorf("argv %q does not end with the user's %q", p.Argv, tc.args)
			}
		})
	}
}

func TestClaudePrepareBadSessionID(t *testing.T) {
	l := testLaunch(t, "claude", "--session-id", "not-a-uuid", "-p", "x")
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if p.ConversationID != "" || len(p.Notices) != 1 || !strings.Contains(p.Notices[0], "not a UUID") {
		t.Errorf("conversation %q, notices %q: want none and a notice", p.ConversationID, p.Notices)
	}
}

func TestClaudePrepareMergesUserSettings(t *testing.T) {
	userHook := map[string]any{"type": "command", "command": "notify-send done"}
	for _, form := range []string{"file", "relative file", "json"} {
		t.Run(form, func(t *testing.T) {
			l := testLaunch(t)
			content := `{"model": "sonnet", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`
			var arg string
			switch form {
			case "file":
				arg = filepath.Join(l.ProjectDir, "my-settings.json")
				writeFile(t, arg, content)
			case "relative file":
				writeFile(t, filepath.Join(l.ProjectDir, ".claude", "extra.json"), content)
				arg = ".claude/extra.json"
			case "json":
				arg = content
			}
			l.Argv = []string{"claude", "-p", "x", "--settings", arg}
			p, err := ClaudeCode.Prepare(context.Background(), l)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(p.Argv, arg) {
				t.Errorf("argv %q still has the user's --settings, which would replace sessiond's", p.Argv)
			}
			m := readJSONFile(t, filepath.Join(l.SessionDir, ClaudeSettingsFile))
			if m["model"] != "sonnet" {
				t.Errorf("the user's model setting is lost: %v", m)
			}
			stop := m["hooks"].(map[string]any)["Stop"].([]any)
			if len(stop) != 2 {
				t.Fatalf("Stop hooks %v: want the user's and sessiond's", stop)
			}
			first := stop[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)
			if first["command"] != userHook["command"] {
				t.Errorf("the user's Stop hook is not first: %v", stop)
			}
			last := stop[1].(map[string]any)["hooks"].([]any)[0].(map[string]any)
			if last["command"] != "/usr/local/bin/sessionctl hook claude-code" {
				t.Errorf("sessiond's Stop hook: %v", last)
			}
		})
	}
}

func TestClaudePrepareUnusableUserSettings(t *testing.T) {
	for name, arg := range map[string]string{
		"missing file": "/nonexistent/settings.json",
		"not JSON":     "{not json",
		"hooks wrong":  `{"hooks": ["x"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			l := testLaunch(t, "claude", "--settings", arg, "-p", "x")
			p, err := ClaudeCode.Prepare(context.Background(), l)
			if err != nil {
				t.Fatal(err)
			}
			if p.Integrated || p.InitialState != StateUnknown {
				t.Errorf("plan %+v: want not integrated, state unknown", p)
			}
			if !slices.Contains(p.Argv, arg) {
				t.Errorf("argv %q lost the user's --settings", p.Argv)
			}
			if len(p.Notices) == 0 || !strings.Contains(p.Notices[0], "hooks are left out") {
				t.Errorf("notices %q", p.Notices)
			}
		})
	}
}

func TestClaudePrepareUntouched(t *testing.T) {
	for _, argv := range [][]string{
		{"claude", "mcp", "list"},
		{"claude", "--model", "opus", "doctor"},
		{"claude", "--version"},
		{"claude", "-h"},
	} {
		l := testLaunch(t, argv...)
		l.MCP = true
		p, err := ClaudeCode.Prepare(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Argv, argv) || p.Integrated || len(p.Files) != 0 || len(p.Notices) != 1 {
			t.Errorf("%q: plan %+v, want it untouched with a notice", argv, p)
		}
	}
}

func TestClaudePrepareHooksOff(t *testing.T) {
	l := testLaunch(t, "claude", "--bare", "-p", "x")
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if p.Integrated || p.InitialState != StateUnknown || len(p.Notices) != 1 {
		t.Errorf("plan %+v: --bare skips hooks, want not integrated and a notice", p)
	}
}

func TestClaudePrepareResume(t *testing.T) {
	const id = "3f0c0e6a-1111-4222-8333-444455556666"
	l := testLaunch(t, "claude", "--session-id", "9a4e8f8e-0000-4000-8000-000000000000", "-p", "continue the task")
	l.Resume = id
	// No transcript: a new conversation starts, with a notice.
	p, err := ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if p.Resumed || p.ConversationID != "9a4e8f8e-0000-4000-8000-000000000000" || len(p.Notices) != 1 || !strings.Contains(p.Notices[0], "not resumed") {
		t.Errorf("without a transcript: plan %+v", p)
	}
	transcript := claudeTranscriptPath(l.Env, l.ProjectDir, id)
	writeFile(t, transcript, `{"type":"user"}`+"\n")
	p, err = ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude", "--settings", filepath.Join(l.SessionDir, ClaudeSettingsFile), "--resume", id, "-p", "continue the task"}
	if !p.Resumed || p.ConversationID != id || p.TranscriptPath != transcript || !slices.Equal(p.Argv, want) {
		t.Errorf("resumed plan %+v\nwant argv %q", p, want)
	}
	l.Resume = "not-a-uuid"
	p, err = ClaudeCode.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if p.Resumed || len(p.Notices) != 1 || !strings.Contains(p.Notices[0], "not a UUID") {
		t.Errorf("bad id: plan %+v", p)
	}
}

func TestClaudeResume(t *testing.T) {
	const id = "3f0c0e6a-1111-4222-8333-444455556666"
	for _, tc := range []struct{ in, want []string }{
		{[]string{"claude", "-p", "go"}, []string{"claude", "--resume", id, "-p", "go"}},
		{[]string{"claude", "--session-id", "x", "-p", "go"}, []string{"claude", "--resume", id, "-p", "go"}},
		{[]string{"claude", "-c", "--model", "opus"}, []string{"claude", "--resume", id, "--model", "opus"}},
		{[]string{"claude", "--resume", "old", "--fork-session", "-p", "go"}, []string{"claude", "--resume", id, "-p", "go"}},
		{[]string{"claude", "--resume=old"}, []string{"claude", "--resume", id}},
	} {
		got, err := ClaudeCode.Resume(tc.in, id)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Resume(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := ClaudeCode.Resume([]string{"claude"}, "nope"); !errors.Is(err, ErrBadConversationID) {
		t.Errorf("bad id: %v", err)
	}
	if _, err := ClaudeCode.Resume([]string{"claude", "mcp", "list"}, id); !errors.Is(err, ErrNotResumable) {
		t.Errorf("subcommand: %v", err)
	}
}

func TestClaudeInteractive(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"claude"}, true},
		{[]string{"claude", "fix it"}, true},
		{[]string{"claude", "--resume", "x"}, true},
		{[]string{"claude", "-p", "fix it"}, false},
		{[]string{"claude", "--print", "fix it"}, false},
		{[]string{"claude", "--model", "-p"}, true},
		{[]string{"claude", "mcp", "list"}, false},
		{[]string{"claude", "--version"}, false},
		{nil, false},
	} {
		if got := ClaudeCode.Interactive(tc.argv); got != tc.want {
			t.Errorf("Interactive(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}

func TestClaudeLocate(t *testing.T) {
	l := testLaunch(t)
	q := Query{ProjectDir: l.ProjectDir, Env: l.Env}
	ctx := context.Background()
	if _, err := ClaudeCode.Locate(ctx, q); !errors.Is(err, ErrNoConversation) {
		t.Errorf("no transcripts: %v", err)
	}
	const a, b = "3f0c0e6a-1111-4222-8333-444455556666", "3f0c0e6a-1111-4222-8333-444455557777"
	pa := claudeTranscriptPath(l.Env, l.ProjectDir, a)
	writeFile(t, pa, "{}\n")
	c, err := ClaudeCode.Locate(ctx, q)
	if err != nil || c.ID != a || c.TranscriptPath != pa {
		t.Errorf("one transcript: %+v, %v", c, err)
	}
	writeFile(t, claudeTranscriptPath(l.Env, l.ProjectDir, b), "{}\n")
	if _, err := ClaudeCode.Locate(ctx, q); !errors.Is(err, ErrAmbiguousConversation) {
		t.Errorf("two transcripts: %v", err)
	}
	q.ConversationID = b
	if c, err := ClaudeCode.Locate(ctx, q); err != nil || c.ID != b {
		t.Errorf("by id: %+v, %v", c, err)
	}
	// A project whose directory name Claude Code shortened is found by id.
	const d = "3f0c0e6a-1111-4222-8333-444455558888"
	other := filepath.Join(claudeConfigDir(l.Env), "projects", "-very-long-path-shortened-1a2b3c", d+".jsonl")
	writeFile(t, other, "{}\n")
	q.ConversationID = d
	if c, err := ClaudeCode.Locate(ctx, q); err != nil || c.TranscriptPath != other {
		t.Errorf("by id elsewhere: %+v, %v", c, err)
	}
	q.ConversationID = "3f0c0e6a-1111-4222-8333-000000000000"
	if _, err := ClaudeCode.Locate(ctx, q); !errors.Is(err, ErrNoConversation) {
		t.Errorf("unknown id: %v", err)
	}
	q.ConversationID = "../../x"
	if _, err := ClaudeCode.Locate(ctx, q); !errors.Is(err, ErrBadConversationID) {
		t.Errorf("bad id: %v", err)
	}
	// CLAUDE_CONFIG_DIR moves everything.
	cfg := filepath.Join(t.TempDir(), "cfg")
	q = Query{ConversationID: a, ProjectDir: l.ProjectDir, Env: append(slices.Clone(l.Env), "CLAUDE_CONFIG_DIR="+cfg)}
	if _, err := ClaudeCode.Locate(ctx, q); !errors.Is(err, ErrNoConversation) {
		t.Errorf("other config dir: %v", err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
