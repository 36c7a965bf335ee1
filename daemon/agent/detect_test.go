package agent

import (
	"errors"
	"slices"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		setting string
		argv    []string
		want    string
	}{
		{"auto", []string{"claude", "-p", "go on"}, "claude-code"},
		{"", []string{"/usr/local/bin/claude"}, "claude-code"},
		{"auto", []string{"/opt/node_modules/@anthropic-ai/claude-code/bin/claude.exe"}, "claude-code"},
		{"auto", []string{"codex", "exec", "go on"}, "codex"},
		{"auto", []string{"/home/dev/.npm/bin/codex"}, "codex"},
		{"auto", []string{"sh", "-c", "exec claude -p hi"}, "generic"},
		{"auto", []string{"aider"}, "generic"},
		{"auto", nil, "generic"},
		{"none", []string{"claude"}, "generic"},
		{"generic", []string{"claude"}, "generic"},
		{"claude-code", []string{"my-claude-wrapper"}, "claude-code"},
		{"codex", []string{"codex-nightly"}, "codex"},
	} {
		a, err := Detect(tc.setting, tc.argv)
		if err != nil {
			t.Errorf("Detect(%q, %q): %v", tc.setting, tc.argv, err)
			continue
		}
		if a.Name() != tc.want {
			t.Errorf("Detect(%q, %q) = %s, want %s", tc.setting, tc.argv, a.Name(), tc.want)
		}
	}
}

func TestDetectUnknown(t *testing.T) {
	_, err := Detect("aider", []string{"aider"})
	if !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("got %v, want ErrUnknownAgent", err)
	}
	if got := err.Error(); got != `unknown agent "aider": want one of auto, claude-code, codex, generic, none` {
		t.Errorf("error %q does not list the settings", got)
	}
}

func TestNames(t *testing.T) {
	want := []string{"auto", "claude-code", "codex", "generic", "none"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
}

func TestParseConversationID(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"3f0c0e6a-1111-4222-8333-444455556666", "3f0c0e6a-1111-4222-8333-444455556666", true},
		{"3F0C0E6A-1111-4222-8333-444455556666", "3f0c0e6a-1111-4222-8333-444455556666", true},
		{"01a230cd-8f0e-7d00-95b3-c9119499aab2", "01a230cd-8f0e-7d00-95b3-c9119499aab2", true},
		{"{3f0c0e6a-1111-4222-8333-444455556666}", "", false},
		{"urn:uuid:3f0c0e6a-1111-4222-8333-444455556666", "", false},
		{"3f0c0e6a111142228333444455556666", "", false},
		{"my-session", "", false},
		{"", "", false},
		{"../../etc/passwd", "", false},
	} {
		got, err := ParseConversationID(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseConversationID(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadConversationID) {
			t.Errorf("ParseConversationID(%q): %v is not ErrBadConversationID", tc.in, err)
		}
	}
}

func TestFirstLine(t *testing.T) {
	long := ""
	for range 300 {
		long += "é"
	}
	for _, tc := range []struct{ in, want string }{
		{"hello there\nsecond line", "hello there"},
		{"\n\n  indented first \n", "indented first"},
		{"", ""},
		{long, long[:2*(MaxLineText-1)] + "…"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
	} {
		if got := firstLine(tc.in); got != tc.want {
			t.Errorf("firstLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/local/bin/sessionctl": "/usr/local/bin/sessionctl",
		"/home/a b/sessionctl":      "'/home/a b/sessionctl'",
		"/tmp/it's/sessionctl":      `'/tmp/it'\''s/sessionctl'`,
		"/x/$(rm -rf)/s":            "'/x/$(rm -rf)/s'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
