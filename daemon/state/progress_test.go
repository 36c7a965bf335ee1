package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAppendProgressTwice(t *testing.T) {
	path := ProgressPath(t.TempDir()) // .sessiond does not exist yet
	first := ProgressEntry{
		Time:       time.Date(2025, 1, 17, 14, 30, 0, 0, time.UTC),
		SessionID:  "k3f9a2",
		EndReason:  "timeout",
		Completed:  []string{"Shopping cart add item functionality", "Cart item quantity update"},
		InProgress: []string{"Cart total calculation with tax"},
		Blocked:    []string{"Waiting for decision on tax API provider"},
		Notes:      []string{"Used React Context for cart state", "Consider Zustand\nif state grows"},
		NextSteps:  []string{"Resolve tax API decision", "Complete cart total calculation"},
	}
	n, err := AppendProgress(path, first)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("first entry: got session %d, want 1", n)
	}
	if got := mode(t, path); got != 0o600 {
		t.Errorf("mode: got %v, want %v", got, os.FileMode(0o600))
	}
	afterFirst := readTestFile(t, path)
	golden(t, "progress_one.md", []byte(afterFirst))

	n, err = AppendProgress(path, ProgressEntry{Time: first.Time.Add(26 * time.Hour), SessionID: "m81c0d", EndReason: "complete", Completed: []string{"Cart total calculation with tax"}})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("second entry: got session %d, want 2", n)
	}
	afterSecond := readTestFile(t, path)
	if !strings.HasPrefix(afterSecond, afterFirst) {
		t.Errorf("first entry changed by the second append:\ngot:\n%s\nwant prefix:\n%s", afterSecond, afterFirst)
	}
	golden(t, "progress_two.md", []byte(afterSecond))
	if got := tempFiles(t, filepath.Dir(path)); len(got) != 0 {
		t.Errorf("temporary files left: %v", got)
	}
}

func TestAppendProgressHandWritten(t *testing.T) {
	tests := []struct {
		name, existing string
		wantN          int
	}{
		{"seed log, newest first", "# claude-progress.txt\n\n## Project: E-Commerce Store\nStarted: 2025-01-15\n\n---\n\n## Session 5 - 2025-01-17 14:30\n\n### Completed\n- [x] Cart\n\n---\n\n## Session 4 - 2025-01-16 10:00\n[Previous session notes...]", 6},
		{"notes without sessions", "remember to run the linter", 1},
		{"empty file", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "claude-progress.txt")
			writeTestFile(t, path, tt.existing)
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			n, err := AppendProgress(path, ProgressEntry{Time: testNow, Notes: []string{"n"}})
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.wantN {
				t.Errorf("got session %d, want %d", n, tt.wantN)
			}
			got := readTestFile(t, path)
			if !strings.HasPrefix(got, tt.existing) {
				t.Errorf("existing content changed:\n%s", got)
			}
			added := got[len(tt.existing):]
			if strings.Count(added, "\n---\n") != 2 && tt.existing != "" {
				t.Errorf("added %q: want the entry between two rules", added)
			}
			if !strings.Contains(added, "## Session ") || !strings.HasSuffix(added, "\n---\n") {
				t.Errorf("added %q: want a session entry ending in a rule", added)
			}
			if m := mode(t, path); m != 0o644 {
				t.Errorf("mode: got %v, want the file's own %v", m, os.FileMode(0o644))
			}
		})
	}
}

func TestAppendProgressSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.md")
	writeTestFile(t, target, "# log\n")
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := AppendProgress(link, ProgressEntry{Time: testNow}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced: %v, %v", fi, err)
	}
	if got := readTestFile(t, target); !strings.Contains(got, "## Session 1") {
		t.Errorf("target: got %q, want the entry", got)
	}
}

func TestAppendProgressOncePerSession(t *testing.T) {
	p := filepath.Join(t.TempDir(), "progress.md")
	e := ProgressEntry{Time: time.Now(), SessionID: "abc", EndReason: "complete", Notes: []string{"first"}}
	for range 2 {
		if n, err := AppendProgress(p, e); err != nil || n != 1 {
			t.Fatalf("append = %d, %v; want entry 1 both times", n, err)
		}
	}
	if n, err := AppendProgress(p, ProgressEntry{Time: time.Now(), SessionID: "abcd"}); err != nil || n != 2 {
		t.Fatalf("another session's entry = %d, %v; want 2", n, err)
	}
	data, _ := os.ReadFile(p)
	if got := strings.Count(string(data), "Session abc,"); got != 1 {
		t.Errorf("%d entries of session abc, want 1:\n%s", got, data)
	}
}

// TestAppendProgressConcurrently: ends of one project that happen at once,
// each through its own handle, all keep their entry, once, numbered in the
// order they were written.
func TestAppendProgressConcurrently(t *testing.T) {
	dir := t.TempDir()
	const n = 200
	errs := make(chan error, n)
	nums := make(chan int, n)
	for i := range n {
		go func() {
			p, err := OpenProject(dir, nil)
			if err != nil {
				errs <- err
				return
			}
			num, err := p.AppendProgress("", ProgressEntry{Time: time.Now(), SessionID: fmt.Sprintf("s%03d", i), EndReason: "complete"})
			errs <- err
			nums <- num
		}()
	}
	seen := map[int]bool{}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		seen[<-nums] = true
	}
	log := readTestFile(t, ProgressPath(dir))
	for i := range n {
		if c := strings.Count(log, fmt.Sprintf("Session s%03d,", i)); c != 1 {
			t.Errorf("session s%03d has %d entries, want 1", i, c)
		}
		if !seen[i+1] {
			t.Errorf("no entry was given number %d", i+1)
		}
	}
	if c := strings.Count(log, "\n## Session "); c != n {
		t.Errorf("%d entries, want %d", c, n)
	}
}

// TestAppendProgressRotates: a log that would pass MaxProgressSize moves
// whole to NAME.1; the numbering goes on in the new one.
func TestAppendProgressRotates(t *testing.T) {
	dir := t.TempDir()
	path := ProgressPath(dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	big := progressHeader + "\n## Session 41 - 2025-01-01 00:00\n\n" + strings.Repeat("x", MaxProgressSize-200) + "\n\n---\n"
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	notes := []string{strings.Repeat("n", 400)}
	n, err := AppendProgress(path, ProgressEntry{Time: time.Now(), SessionID: "next", Notes: notes})
	if err != nil {
		t.Fatal(err)
	}
	if n != 42 {
		t.Errorf("entry number %d, want 42", n)
	}
	if got := readTestFile(t, path+".1"); got != big {
		t.Errorf("the rotated log is not the old one whole (%d bytes, want %d)", len(got), len(big))
	}
	cur := readTestFile(t, path)
	if !strings.Contains(cur, "## Session 42 - ") || !strings.Contains(cur, "progress.md.1") || len(cur) > 4096 {
		t.Errorf("new log:\n%s", cur)
	}
	if n, err := AppendProgress(path, ProgressEntry{Time: time.Now(), SessionID: "after"}); err != nil || n != 43 {
		t.Errorf("next entry: %d, %v; want 43", n, err)
	}
}
