package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// withinBound runs op and fails the test if it takes longer than a bound,
// instead of hanging the test run.
func withinBound(t *testing.T, what string, op func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still running after 10s", what)
		return nil
	}
}

// inputOps are the reads of a project handle, each with the project path
// it reads; setting that path to a FIFO or a device must give a clear error
// at once.
func inputOps(p *Project) []struct {
	rel string
	op  func() error
} {
	sd := func(name string) string { return DirName + "/" + name }
	return []struct {
		rel string
		op  func() error
	}{
		{DefaultFeatureList, func() error { _, err := p.LoadFeatures(""); return err }},
		{ProjectConfigFile, func() error { _, err := p.ReadConfig(); return err }},
		{sd(SessionStateFile), func() error { _, err := p.LoadSessionState(); return err }},
		{sd(HandoffFile), func() error { _, err := p.LoadHandoff(); return err }},
		{sd(LockFile), func() error { _, err := p.ReadLock(); return err }},
		{sd(WarningFile), func() error { _, err := p.ReadWarning(); return err }},
		{sd(ProgressFile), func() error { _, err := p.AppendProgress("", ProgressEntry{Time: testNow}); return err }},
		{"notes/progress.txt", func() error {
			_, err := p.AppendProgress("notes/progress.txt", ProgressEntry{Time: testNow})
			return err
		}},
		{".git/info/exclude", p.EnsureStateDir},
		{".git", p.EnsureStateDir},
	}
}

// TestInputsFIFO puts a FIFO (no writer) in place of every input file: each
// read fails at once, saying what the path is, and the FIFO stays.
func TestInputsFIFO(t *testing.T) {
	for _, walk := range []bool{false, true} {
		forceWalk = walk
		t.Cleanup(func() { forceWalk = false })
		project := t.TempDir()
		p, err := OpenProject(project, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range inputOps(p) {
			t.Run(fmt.Sprintf("walk=%v/%s", walk, in.rel), func(t *testing.T) {
				path := filepath.Join(project, in.rel)
				if err := os.MkdirAll(filepath.Join(project, DirName), 0o700); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(in.rel, ".git/") {
					if err := os.MkdirAll(filepath.Join(project, ".git", "info"), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(filepath.Join(project, strings.Split(in.rel, "/")[0]))
				err := withinBound(t, in.rel, in.op)
				if !errors.Is(err, ErrFileType) || !strings.Contains(err.Error(), path+" is a FIFO, not a regular file") {
					t.Fatalf("got %v, want an error saying %s is a FIFO", err, path)
				}
				if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
					t.Errorf("the FIFO was replaced: %v", err)
				}
			})
		}
	}
}

// TestInputsDevice links every input file to /dev/zero: inside the project
// the link leaves it and is refused; where the file is read as the owner
// wherever it is (git's exclude, the .git file), the device is named as
// such. Nothing is read from it.
func TestInputsDevice(t *testing.T) {
	project := t.TempDir()
	p, err := OpenProject(project, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputOps(p) {
		t.Run(in.rel, func(t *testing.T) {
			path := filepath.Join(project, in.rel)
			for _, d := range []string{filepath.Join(project, DirName), filepath.Join(project, ".git", "info"), filepath.Dir(path)} {
				if in.rel == ".git" && strings.HasPrefix(d, filepath.Join(project, ".git")) {
					continue
				}
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(filepath.Join(project, strings.Split(in.rel, "/")[0]))
			checkDeviceLink(t, in.rel, path, withinBound(t, in.rel, in.op))
		})
	}
}

// checkDeviceLink checks the error of a read whose input rel (at path) is a
// symlink to /dev/zero.
func checkDeviceLink(t *testing.T, rel, path string, err error) {
	t.Helper()
	switch {
	case strings.HasPrefix(rel, ".git"):
		if !errors.Is(err, ErrFileType) || !strings.Contains(err.Error(), "is a character device, not a regular file") {
			t.Fatalf("got %v, want an error saying it is a character device", err)
		}
	case strings.HasPrefix(rel, DirName+"/") && rel != DirName+"/"+ProgressFile:
		// sessiond's own files are never symlinks.
		if !errors.Is(err, ErrFileType) || !strings.Contains(err.Error(), "refused: "+path+" is a symlink") {
			t.Fatalf("got %v, want the symlink refused", err)
		}
	default:
		if !errors.Is(err, ErrOutsideProject) {
			t.Fatalf("got %v, want ErrOutsideProject", err)
		}
	}
}

// TestInputsPathAPI checks the path-based readers with a FIFO and a device.
func TestInputsPathAPI(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero"} {
		for name, op := range map[string]func() error{
			"ReadJSON":     func() error { var v any; return ReadJSON(path, &v) },
			"LoadHandoff":  func() error { _, err := LoadHandoff(path); return err },
			"LoadFeatures": func() error { _, err := LoadFeatures(path); return err },
		} {
			err := withinBound(t, name+" "+path, op)
			if !errors.Is(err, ErrFileType) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s(%s): got %v, want ErrFileType naming the path", name, path, err)
			}
		}
	}
}

// TestInputsOversized checks the caps: an oversized state file is moved
// aside as corrupt, an oversized feature list (the user's file) is left
// where it is.
func TestInputsOversized(t *testing.T) {
	project := t.TempDir()
	p, err := OpenProject(project, nil)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(project, DirName, SessionStateFile)
	features := filepath.Join(project, DefaultFeatureList)
	writeTestFile(t, state, "{}")
	writeTestFile(t, features, "[]")
	for _, f := range []struct {
		path string
		size int64
	}{{state, MaxStateSize + 1}, {features, MaxFeatureListSize + 1}} {
		if err := os.Truncate(f.path, f.size); err != nil { // sparse: cheap
			t.Fatal(err)
		}
	}
	_, err = p.LoadSessionState()
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1 MiB limit") {
		t.Fatalf("oversized state: got %v, want a *CorruptError naming the 1 MiB limit", err)
	}
	if fi, err := os.Stat(ce.KeptAs); err != nil || fi.Size() != MaxStateSize+1 {
		t.Errorf("kept copy %s: %v, want all %d bytes", ce.KeptAs, err, MaxStateSize+1)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("oversized state still in place: %v", err)
	}
	_, err = p.LoadFeatures("")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), features) || !strings.Contains(err.Error(), "8 MiB limit") {
		t.Fatalf("oversized feature list: got %v, want ErrTooLarge naming the file and the 8 MiB limit", err)
	}
	if fi, err := os.Stat(features); err != nil || fi.Size() != MaxFeatureListSize+1 {
		t.Errorf("feature list changed: %v", err)
	}
}

// TestRemoveStaleTemps checks that only old temporary files of atomic
// writes go: a fresh one (a writer at work) and every other file stay.
func TestRemoveStaleTemps(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-2 * StaleTempAge)
	files := map[string]bool{ // path: removed
		".session.json.tmp-123":              true,
		"sessions/a/.session.json.tmp-99":    true,
		"sessions/a/.handoff.json.tmp-abcXY": true,
		"sessions/a/.output.log.1.tmp-7":     true,
		"sessions/a/session.json":            false,
		"sessions/a/.fresh.json.tmp-5":       false, // kept: young
		"sessions/a/notes.tmp-5":             false, // not the pattern
		"sessions/a/.x.tmp-":                 false,
		"sessions/a/b/c/.deep.json.tmp-1":    false, // below the depth
	}
	for f := range files {
		path := filepath.Join(root, f)
		writeTestFile(t, path, "x")
		if !strings.Contains(f, "fresh") {
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	dirTemp := filepath.Join(root, "sessions", ".dir.tmp-1") // a directory is never removed
	if err := os.Mkdir(dirTemp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dirTemp, old, old); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveStaleTemps(root, 2)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for f, gone := range files {
		_, err := os.Lstat(filepath.Join(root, f))
		if gone {
			want = append(want, filepath.Join(root, f))
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: still there", f)
			}
		} else if err != nil {
			t.Errorf("%s: removed, want it kept", f)
		}
	}
	if len(removed) != len(want) {
		t.Errorf("removed: got %v, want %v", removed, want)
	}
	if _, err := os.Stat(dirTemp); err != nil {
		t.Errorf("directory named like a temporary file: %v", err)
	}
}

// TestEnsureStateDirRemovesStaleTemps checks that opening a project's
// .sessiond cleans what an interrupted write left.
func TestEnsureStateDirRemovesStaleTemps(t *testing.T) {
	project := t.TempDir()
	stale := filepath.Join(project, DirName, "."+SessionStateFile+".tmp-42")
	fresh := filepath.Join(project, DirName, "."+HandoffFile+".tmp-43")
	writeTestFile(t, stale, "{")
	writeTestFile(t, fresh, "{")
	old := time.Now().Add(-2 * StaleTempAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	p, err := OpenProject(project, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.EnsureStateDir(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temporary file still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temporary file removed: %v", err)
	}
}
