package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func fullHandoff() *Handoff {
	code := 1
	return &Handoff{
		SessionID:            "k3f9a2",
		ProjectDir:           "/home/ada/src/shop",
		Command:              []string{"claude", "-p", "continue"},
		StartedAt:            time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC),
		EndedAt:              time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC),
		EndReason:            "timeout",
		ExitCode:             &code,
		Signal:               "",
		TaskAttempted:        "Cart total calculation with tax",
		TaskStatus:           TaskInProgress,
		CurrentStep:          3,
		TotalSteps:           5,
		LastActionTaken:      "Added tax rate lookup to cart.ts",
		BlockedReason:        "",
		RecommendedNextSteps: []string{"Continue from step 4: wire tax into the total"},
		Warnings:             []string{"Uncommitted changes exist", "Timeout hit: the last step may be half done"},
		GitCommitHash:        "9fceb02d0ae598e95dc970b74767f19372d61af8",
		GitBranch:            "feature/cart",
		UncommittedFiles:     []string{"src/cart.ts", "src/tax.ts"},
		Checkpoint:           "1b2e3c4d5f60718293a4b5c6d7e8f90123456789",
		FilesChanged:         []string{"src/cart.ts", "src/tax.ts", "test/cart.test.ts"},
		LastFileEdited:       "src/tax.ts",
		DevServerWasRunning:  true,
		Restarts:             1,
		LogTail:              []string{"✓ cart adds items", "✗ cart total includes tax", "Error: expected 10.8, got 10"},
	}
}

func TestHandoffRoundTrip(t *testing.T) {
	path := HandoffPath(t.TempDir())
	want := fullHandoff()
	if err := SaveHandoff(path, want); err != nil {
		t.Fatal(err)
	}
	if got := mode(t, path); got != 0o600 {
		t.Errorf("mode: got %v, want %v", got, os.FileMode(0o600))
	}
	got, err := LoadHandoff(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestHandoffAllFieldsPresent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions", "x", "handoff.json")
	if err := SaveHandoff(path, &Handoff{SessionID: "x"}); err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(readTestFile(t, path)), &m); err != nil {
		t.Fatal(err)
	}
	keys := "session_id, project_dir, command, started_at, ended_at, end_reason, exit_code, " +
		"signal, task_attempted, task_status, current_step, total_steps, last_action_taken, blocked_reason, " +
		"blocked_needs_human, recommended_next_steps, warnings, git_commit_hash, git_branch, uncommitted_files, " +
		"checkpoint, files_changed, last_file_edited, dev_server_was_running, restarts, log_tail"
	for _, k := range strings.Split(keys, ", ") {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	if got, want := len(m), len(strings.Split(keys, ", ")); got != want {
		t.Errorf("got %d keys, want %d", got, want)
	}
	for _, k := range []string{"command", "recommended_next_steps", "warnings", "uncommitted_files", "files_changed", "log_tail"} {
		if got := string(m[k]); got != "[]" {
			t.Errorf("%s: got %s, want []", k, got)
		}
	}
	if got := string(m["exit_code"]); got != "null" {
		t.Errorf("exit_code: got %s, want null (unknown)", got)
	}
}

func TestHandoffBound(t *testing.T) {
	h := &Handoff{}
	for i := range MaxHandoffFiles + 5 {
		h.FilesChanged = append(h.FilesChanged, fmt.Sprintf("f%d", i))
	}
	for i := range MaxLogTailLines + 10 {
		h.LogTail = append(h.LogTail, fmt.Sprintf("line %d %s", i, strings.Repeat("x", MaxLogLineLen)))
	}
	BoundHandoff(h)
	if got := len(h.FilesChanged); got != MaxHandoffFiles {
		t.Errorf("files: got %d, want %d", got, MaxHandoffFiles)
	}
	if got, want := h.Warnings, []string{"files_changed: 5 more not listed"}; !reflect.DeepEqual(got, want) {
		t.Errorf("warnings: got %q, want %q", got, want)
	}
	if got := len(h.LogTail); got != MaxLogTailLines {
		t.Errorf("log tail: got %d lines, want %d", got, MaxLogTailLines)
	}
	if !strings.HasPrefix(h.LogTail[len(h.LogTail)-1], fmt.Sprintf("line %d ", MaxLogTailLines+9)) {
		t.Errorf("log tail: got last line %.20q, want the last line kept", h.LogTail[len(h.LogTail)-1])
	}
}

func TestLoadHandoffBad(t *testing.T) {
	tests := []struct {
		name    string
		content *string
	}{
		{"missing", nil},
		{"empty", ptr("")},
		{"truncated", ptr(`{"session_id": "k3f9a2", "ended_at": "2026-11-`)},
		{"not JSON", ptr("session_id=k3f9a2")},
		{"wrong type", ptr(`{"exit_code": "one"}`)},
		{"bad time", ptr(`{"ended_at": "last tuesday"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := HandoffPath(t.TempDir())
			if tt.content != nil {
				writeTestFile(t, path, *tt.content)
			}
			h, err := LoadHandoff(path)
			if h != nil {
				t.Errorf("got %+v, want nil", h)
			}
			if tt.content == nil {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("got %v, want an error wrapping fs.ErrNotExist", err)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want an error matching ErrCorrupt", err)
			}
			if kept := corruptCopies(t, path); len(kept) != 1 {
				t.Errorf("kept copies: got %v, want one", kept)
			}
		})
	}
}
