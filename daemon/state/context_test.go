package state

import (
	"bytes"
	"os"
	"testing"
	"time"
)

func TestBuildContext(t *testing.T) {
	next := mustParse(t, `[{"id": 29, "description": "Fix JWT validation in kong-gateway.ts", "priority": "high", "steps": ["reproduce with an expired token", "validate exp and nbf"]}]`)[0]
	prev := fullHandoff()
	prev.LogTail = append(prev.LogTail, "a line with ``` in it")
	tests := []struct {
		golden string
		in     ContextInput
	}{
		{"context_full.md", ContextInput{
			SessionID:  "m81c0d",
			ProjectDir: "/home/ada/src/shop",
			Deadline:   testNow.Add(4 * time.Hour),
			WarnAt:     testNow.Add(3*time.Hour + 30*time.Minute),
			Previous:   prev,
			State:      fullState(),
			NextTask:   &next,
			Notes:      []string{"feature list changed since the last session: 31 now passes"},
			GitLog:     []string{"9fceb02 Add tax rate lookup", "1b2e3c4 Cart quantity update"},
			Now:        testNow,
		}},
		{"context_first.md", ContextInput{SessionID: "a1b2c3", ProjectDir: "/srv/new", Now: testNow}},
		{"context_short.md", ContextInput{SessionID: "s40", ProjectDir: "/srv/short", Deadline: testNow.Add(40 * time.Second), WarnAt: testNow.Add(10 * time.Second), Now: testNow}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got := BuildContext(tt.in)
			golden(t, tt.golden, got)
			if again := BuildContext(tt.in); !bytes.Equal(again, got) {
				t.Errorf("second build differs: got %q, want %q", again, got)
			}
		})
	}
}

func TestBuildContextDoesNotChangeInput(t *testing.T) {
	log := []string{"abc first\nline"}
	BuildContext(ContextInput{GitLog: log, Now: testNow})
	if log[0] != "abc first\nline" {
		t.Errorf("got %q, want the caller's slice unchanged", log[0])
	}
}

func TestContextWrittenAtomically(t *testing.T) {
	project := t.TempDir()
	in := ContextInput{SessionID: "x", ProjectDir: project, Now: testNow}
	if err := WriteContext(project, in); err != nil {
		t.Fatal(err)
	}
	if got, want := readTestFile(t, ContextPath(project)), string(BuildContext(in)); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := mode(t, ContextPath(project)); got != 0o600 {
		t.Errorf("mode: got %v, want %v", got, os.FileMode(0o600))
	}
}
