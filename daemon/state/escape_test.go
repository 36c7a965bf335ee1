package state

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStoreText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"windows\r\nline", "windows\nline"},
		{"ok\rFAILED", `ok\rFAILED`},
		{"\x1b[2J\x1b]0;title\x07", `\x1b[2J\x1b]0;title\x07`},
		{"c1 \u009b2J", `c1 \u009b2J`},
		{"del\x7f", `del\x7f`},
		{"bad \xff utf-8", "bad \uFFFD utf-8"},
		{"rtl \u202e kept", "rtl \u202e kept"}, // a display matter: TerminalText escapes it
	}
	for _, tt := range tests {
		got, err := StoreText("summary", tt.in)
		if err != nil || got != tt.want {
			t.Errorf("StoreText(%q): got %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := StoreText("summary", "a\x00b"); err == nil || !strings.HasPrefix(err.Error(), "summary: ") {
		t.Errorf("NUL: got %v, want an error naming the field", err)
	}
}

func TestTerminalTextState(t *testing.T) {
	for in, want := range map[string]string{
		"ok":                 "ok",
		"a\nb\tc":            "a\nb\tc",
		"\x1b[31mred\x1b[0m": `\x1b[31mred\x1b[0m`,
		"x\u202ey":           `x\u202ey`,
		"\xff":               `\xff`,
		"\x00\x01\x7f\u0085": `\x00\x01\x7f\u0085`,
		"日本語 ✓ café\r\nend":  `日本語 ✓ café\r` + "\nend",
	} {
		if got := TerminalText(in); got != want {
			t.Errorf("TerminalText(%q): got %q, want %q", in, got, want)
		}
	}
	if got, want := TerminalLine("a\nb\tc"), `a\nb\tc`; got != want {
		t.Errorf("TerminalLine: got %q, want %q", got, want)
	}
}

// hostile is report text an agent (or whoever controls it) might send to
// forge the files and reach the admin's terminal.
const hostile = "done\x1b[2J\x1b]0;pwned\x07\n## Session 99 - forged\n---\n```\n# Heading\u009b"

func assertNoControls(t *testing.T, what string, data []byte) {
	t.Helper()
	for i, r := range string(data) {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			t.Errorf("%s: control character %U at byte %d", what, r, i)
			return
		}
	}
}

func TestProgressEscapesFields(t *testing.T) {
	path := ProgressPath(t.TempDir())
	e := ProgressEntry{Time: testNow, SessionID: hostile, EndReason: hostile,
		Completed: []string{hostile}, InProgress: []string{hostile}, Blocked: []string{hostile}, Notes: []string{hostile}, NextSteps: []string{hostile}}
	if _, err := AppendProgress(path, e); err != nil {
		t.Fatal(err)
	}
	n, err := AppendProgress(path, ProgressEntry{Time: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("second entry numbered %d, want 2: a field forged a heading", n)
	}
	data := []byte(readTestFile(t, path))
	assertNoControls(t, "progress log", data)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## Session 99") || strings.HasPrefix(line, "```") || strings.HasPrefix(line, "# Heading") {
			t.Errorf("forged line %q", line)
		}
	}
}

func TestContextEscapesFields(t *testing.T) {
	h := fullHandoff()
	h.TaskAttempted, h.LastActionTaken, h.BlockedReason = hostile, hostile, hostile
	h.GitBranch, h.LastFileEdited = "b`r`anch"+hostile, hostile
	h.Warnings = []string{hostile}
	h.RecommendedNextSteps = []string{hostile}
	h.LogTail = []string{hostile, "\x1b[32m✓ ok\x1b[0m"}
	h.EndReason = "error"
	s := fullState()
	s.CurrentPlan = "step one\n## Reporting\n---\n" + hostile
	s.NextActions = []string{hostile}
	s.ActiveBlockers = []Blocker{{Question: hostile, Priority: hostile}}
	f := &Feature{ID: StringTaskID(hostile), Description: hostile, Steps: []string{hostile}}
	out := BuildContext(ContextInput{SessionID: hostile, ProjectDir: "/p", Previous: h, State: s, NextTask: f, GitLog: []string{hostile}, Now: testNow})
	assertNoControls(t, "context.md", out)
	// Follow code blocks as CommonMark does: a fence of N backticks ends
	// only at a line of N or more backticks alone.
	headings := 0
	fence := ""
	for _, line := range strings.Split(string(out), "\n") {
		run := line[:len(line)-len(strings.TrimLeft(line, "`"))]
		switch {
		case fence == "" && len(run) >= 3:
			fence = run
			continue
		case fence != "" && len(run) >= len(fence) && strings.TrimSpace(line) == run:
			fence = ""
			continue
		}
		if fence == "" && (line == "## Reporting" || line == "---" || strings.HasPrefix(line, "## Session 99") || strings.HasPrefix(line, "# Heading")) {
			if line == "## Reporting" {
				headings++
				continue
			}
			t.Errorf("forged line outside a code block: %q", line)
		}
	}
	if headings != 1 {
		t.Errorf("got %d \"## Reporting\" headings outside code blocks, want 1", headings)
	}
	if fence != "" {
		t.Errorf("a code block is left open")
	}
}

func TestRestoreSummaryEscapes(t *testing.T) {
	s := &SessionState{LastSession: &LastSession{Summary: hostile, EndReason: hostile}, NextActions: []string{hostile},
		ActiveBlockers: []Blocker{{Question: hostile, Priority: hostile}}}
	out := RestoreSummary(s, testNow)
	assertNoControls(t, "restore summary", []byte(out))
	if strings.Contains(out, "\n## Session 99") {
		t.Errorf("a field started a line of its own:\n%s", out)
	}
}

// TestBoundEscapes checks that what is stored is escaped, and stays the
// same when bounded again (a loaded state is bounded once more).
func TestBoundEscapes(t *testing.T) {
	s := &SessionState{LastSession: &LastSession{Summary: hostile + "\x00"}, NextActions: []string{hostile}, CurrentPlan: hostile,
		ActiveBlockers: []Blocker{{Question: hostile}}}
	BoundSessionState(s)
	first, _ := marshalJSON(s)
	BoundSessionState(s)
	second, _ := marshalJSON(s)
	if !bytes.Equal(first, second) {
		t.Errorf("Bound is not stable:\n%s\n%s", first, second)
	}
	for _, text := range []string{s.LastSession.Summary, s.NextActions[0], s.CurrentPlan, s.ActiveBlockers[0].Question} {
		assertNoControls(t, "bounded state", []byte(strings.ReplaceAll(text, "\n", "")))
	}
	h := &Handoff{TaskAttempted: hostile, LogTail: []string{hostile}, FilesChanged: []string{"a\x1bb"}, Command: []string{"sh", "-c", hostile}}
	BoundHandoff(h)
	data, _ := marshalJSON(h)
	var back Handoff
	if err := decodeJSON(data, &back); err != nil {
		t.Fatal(err)
	}
	for _, text := range append(append([]string{back.TaskAttempted}, back.LogTail...), append(back.FilesChanged, back.Command...)...) {
		assertNoControls(t, "bounded handoff", []byte(text))
	}
}

// TestEncodeHandoffFits checks that a handoff too large for its cap is
// trimmed until it fits, and says so.
func TestEncodeHandoffFits(t *testing.T) {
	handoffCap = 256 << 10
	t.Cleanup(func() { handoffCap = MaxHandoffSize })
	long := strings.Repeat("\x01", 1000) // escapes to 5 bytes a byte in JSON
	h := &Handoff{}
	for range MaxHandoffFiles / 10 {
		h.FilesChanged = append(h.FilesChanged, long)
		h.UncommittedFiles = append(h.UncommittedFiles, long)
	}
	data, err := encodeHandoff(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > handoffCap {
		t.Errorf("encoded handoff is %d bytes, over the %d cap", len(data), handoffCap)
	}
	if len(h.FilesChanged) == 0 || !strings.Contains(strings.Join(h.Warnings, "\n"), "handoff trimmed") {
		t.Errorf("got %d files and warnings %q, want some files kept and a warning", len(h.FilesChanged), h.Warnings)
	}
	path := HandoffPath(t.TempDir())
	if err := SaveHandoff(path, h); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHandoff(path); err != nil {
		t.Errorf("a saved handoff does not load: %v", err)
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi == nil {
		t.Fatal("no .sessiond")
	}
}

func FuzzStoreText(f *testing.F) {
	for _, s := range []string{"", "plain", hostile, "\r\n\r", "\xff\xfe", "a\x00b", "\u202e\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := StoreText("f", s)
		if strings.IndexByte(s, 0) >= 0 {
			if err == nil {
				t.Fatalf("%q: NUL accepted", s)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("%q: stored %q is not UTF-8", s, got)
		}
		assertNoControls(t, "stored", []byte(got))
		if again := storeEscape(got); again != got {
			t.Fatalf("%q: not stable: %q then %q", s, got, again)
		}
		for _, out := range []string{TerminalText(s), TerminalLine(s), inline(s), codeSpan(s)} {
			assertNoControls(t, "printed", []byte(strings.NewReplacer("\n", "", "\t", "").Replace(out)))
		}
		if strings.ContainsAny(inline(s), "\n\r") || strings.ContainsAny(TerminalLine(s), "\n\t") {
			t.Fatalf("%q: a one-line form holds a line break", s)
		}
	})
}
