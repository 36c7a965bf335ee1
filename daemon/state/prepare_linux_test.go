package state

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// preparedProject is a new project whose end's files PrepareEnd made
// ready, the progress log being progress.
func preparedProject(t *testing.T, progress string) (string, *Project) {
	t.Helper()
	dir := t.TempDir()
	p, err := OpenProject(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PrepareEnd(progress); err != nil {
		t.Fatal(err)
	}
	return dir, p
}

// TestPrepareEndMakesTheEndsFiles: the spares PrepareEnd makes are the
// very files the end's handoff, session state and first progress entry
// are written into, and nothing is left beside them.
func TestPrepareEndMakesTheEndsFiles(t *testing.T) {
	dir, p := preparedProject(t, "")
	sd := filepath.Join(dir, DirName)
	spares := map[string]os.FileInfo{}
	for _, name := range []string{HandoffFile, SessionStateFile, ProgressFile} {
		fi, err := os.Lstat(filepath.Join(sd, SpareName(name)))
		if err != nil {
			t.Fatalf("no spare for %s: %v", name, err)
		}
		if fi.Size() != 0 || fi.Mode() != 0o600 {
			t.Errorf("the spare of %s: %d bytes, mode %v; want empty, 0600", name, fi.Size(), fi.Mode())
		}
		spares[name] = fi
	}
	// Made again, they are left as they are.
	if err := p.PrepareEnd(""); err != nil {
		t.Fatal(err)
	}
	if err := p.SaveHandoff(&Handoff{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if err := p.SaveSessionState(&SessionState{ProgressPct: 40}); err != nil {
		t.Fatal(err)
	}
	if n, err := p.AppendProgress("", ProgressEntry{Time: time.Now(), SessionID: "s1", EndReason: "complete"}); err != nil || n != 1 {
		t.Fatalf("AppendProgress: %d, %v", n, err)
	}
	for name, spare := range spares {
		fi, err := os.Lstat(filepath.Join(sd, name))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(spare, fi) {
			t.Errorf("%s is a new file, not its spare written into", name)
		}
		if fi.Mode() != 0o600 || fi.Size() == 0 {
			t.Errorf("%s: %d bytes, mode %v", name, fi.Size(), fi.Mode())
		}
	}
	entries, _ := os.ReadDir(sd)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{HandoffFile, ProgressFile, SessionStateFile}; !slices.Equal(left, want) {
		t.Errorf(".sessiond holds %v, want %v", left, want)
	}
	if h, err := p.LoadHandoff(); err != nil || h.SessionID != "s1" {
		t.Errorf("the handoff read back: %+v, %v", h, err)
	}
	log := readTestFile(t, filepath.Join(sd, ProgressFile))
	if !strings.HasPrefix(log, progressHeader) || strings.Count(log, "## Session ") != 1 {
		t.Errorf("the log made from its spare:\n%s", log)
	}

	// The next session's end: the spares are made again, and the files
	// written into them swap places with the ones before.
	if err := p.PrepareEnd(""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(sd, SpareName(ProgressFile))); !os.IsNotExist(err) {
		t.Errorf("a spare for a log that exists: %v", err)
	}
	before, _ := os.Lstat(filepath.Join(sd, SpareName(HandoffFile)))
	if err := p.SaveHandoff(&Handoff{SessionID: "s2"}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Lstat(filepath.Join(sd, HandoffFile))
	if before == nil || after == nil || !os.SameFile(before, after) {
		t.Errorf("the second handoff is not its spare written into")
	}
}

// TestPrepareEndOnlyInItsOwnDirectory: a progress log outside .sessiond
// gets no spare beside it (the project's own files are left as they are).
func TestPrepareEndOnlyInItsOwnDirectory(t *testing.T) {
	for _, rel := range []string{"PROGRESS.md", "notes/progress.md", ".sessiond/sub/progress.md"} {
		dir, _ := preparedProject(t, rel)
		var found []string
		_ = filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && strings.Contains(fi.Name(), "progress") || strings.Contains(path, "PROGRESS") {
				found = append(found, path)
			}
			return nil
		})
		if len(found) > 0 {
			t.Errorf("progress log %q: PrepareEnd made %v", rel, found)
		}
	}
	if name, ok := stateDirFile(".sessiond/log.md"); !ok || name != "log.md" {
		t.Errorf("stateDirFile(.sessiond/log.md) = %q, %v", name, ok)
	}
}

// TestProgressFromSpareConcurrently: writers that all find the log
// missing and its spare there each add their entry once; one of them
// makes the log out of the spare, the others append to it.
func TestProgressFromSpareConcurrently(t *testing.T) {
	for round := range 20 {
		dir, _ := preparedProject(t, "")
		const n = 6
		var wg sync.WaitGroup
		nums := make([]int, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nums[i], errs[i] = AppendProgress(ProgressPath(dir), ProgressEntry{Time: time.Now(), SessionID: fmt.Sprintf("s%d", i), EndReason: "complete"})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, writer %d: %v", round, i, err)
			}
		}
		log := readTestFile(t, ProgressPath(dir))
		if strings.Count(log, progressHeader) != 1 || !strings.HasPrefix(log, progressHeader) {
			t.Fatalf("round %d: the header is not there once, first:\n%s", round, log)
		}
		got := regexp.MustCompile(`## Session (\d+) `).FindAllStringSubmatch(log, -1)
		if len(got) != n {
			t.Fatalf("round %d: %d entries, want %d:\n%s", round, len(got), n, log)
		}
		slices.Sort(nums)
		for i, num := range nums {
			if num != i+1 {
				t.Fatalf("round %d: session numbers %v, want 1..%d", round, nums, n)
			}
			if !strings.Contains(log, fmt.Sprintf("s%d", i)) {
				t.Fatalf("round %d: the entry of s%d is missing:\n%s", round, i, log)
			}
		}
		if _, err := os.Lstat(filepath.Join(dir, DirName, SpareName(ProgressFile))); !os.IsNotExist(err) {
			t.Fatalf("round %d: the spare is still there (%v): the log was not made out of it", round, err)
		}
	}
}

// TestProgressSpareThatIsNotOne: a spare that is a symlink, or a file
// with another name too, is never written through; the log is made as
// any new log is.
func TestProgressSpareThatIsNotOne(t *testing.T) {
	for _, kind := range []string{"symlink", "hard link"} {
		dir := t.TempDir()
		sd := filepath.Join(dir, DirName)
		if err := os.Mkdir(sd, 0o700); err != nil {
			t.Fatal(err)
		}
		victim := filepath.Join(t.TempDir(), "victim")
		writeTestFile(t, victim, "keep me\n")
		spare := filepath.Join(sd, SpareName(ProgressFile))
		var err error
		if kind == "symlink" {
			err = os.Symlink(victim, spare)
		} else {
			err = os.Link(victim, spare)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := AppendProgress(ProgressPath(dir), ProgressEntry{Time: time.Now(), SessionID: "s1", EndReason: "complete"}); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if got := readTestFile(t, victim); got != "keep me\n" {
			t.Errorf("%s: the file the spare names was written: %q", kind, got)
		}
		if log := readTestFile(t, ProgressPath(dir)); !strings.HasPrefix(log, progressHeader) || !strings.Contains(log, "s1") {
			t.Errorf("%s: the log:\n%s", kind, log)
		}
	}
}

// TestMakeSpareIsTheArchive: the spare MakeSpare makes is the very file
// SaveHandoff writes the archive into; made again, it is left alone.
func TestMakeSpareIsTheArchive(t *testing.T) {
	dir := t.TempDir()
	if err := MakeSpare(dir, HandoffFile); err != nil {
		t.Fatal(err)
	}
	spare, err := os.Lstat(filepath.Join(dir, SpareName(HandoffFile)))
	if err != nil || spare.Size() != 0 || spare.Mode() != 0o600 {
		t.Fatalf("the spare: %v, %v", spare, err)
	}
	if err := os.WriteFile(filepath.Join(dir, SpareName(HandoffFile)), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MakeSpare(dir, HandoffFile); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, SpareName(HandoffFile))); string(b) != "kept" {
		t.Fatalf("MakeSpare again changed the spare: %q", b)
	}
	if err := os.Truncate(filepath.Join(dir, SpareName(HandoffFile)), 0); err != nil {
		t.Fatal(err)
	}
	if err := SaveHandoff(filepath.Join(dir, HandoffFile), &Handoff{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	archive, err := os.Lstat(filepath.Join(dir, HandoffFile))
	if err != nil || !os.SameFile(spare, archive) {
		t.Fatalf("the archive is not the spare made ahead: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != HandoffFile && e.Name() != SpareName(HandoffFile) {
			t.Errorf("%s beside the archive", e.Name())
		}
	}
}
