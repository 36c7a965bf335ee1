package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProjectOwnRights runs every method of a handle with the daemon's own
// rights, as a user daemon does: the files are where and what they always
// were, and no thread is switched.
func TestProjectOwnRights(t *testing.T) {
	project := t.TempDir()
	writeTestFile(t, filepath.Join(project, ".git", "info", "exclude"), "")
	writeTestFile(t, filepath.Join(project, DefaultFeatureList), `[{"id": 1, "description": "a", "passes": true}, {"id": 2, "description": "b"}]`)
	writeTestFile(t, filepath.Join(project, ProjectConfigFile), "[session]\ncommand = [\"true\"]\n")
	before := threadSwitches.Load()
	for _, o := range []*Owner{nil, {UID: os.Geteuid(), GID: os.Getegid()}} {
		p, err := OpenProject(project, o)
		if err != nil {
			t.Fatal(err)
		}
		if p.Dir() != project {
			t.Errorf("Dir: got %s, want %s", p.Dir(), project)
		}
		if err := p.EnsureStateDir(); err != nil {
			t.Fatal(err)
		}
		if err := p.SaveSessionState(&SessionState{ProgressPct: 50}); err != nil {
			t.Fatal(err)
		}
		if s, err := p.LoadSessionState(); err != nil || s == nil || s.ProgressPct != 50 {
			t.Fatalf("LoadSessionState: got %+v, %v", s, err)
		}
		if err := p.SaveHandoff(&Handoff{SessionID: "s1"}); err != nil {
			t.Fatal(err)
		}
		if h, err := p.LoadHandoff(); err != nil || h.SessionID != "s1" {
			t.Fatalf("LoadHandoff: got %+v, %v", h, err)
		}
		if err := p.CreateLock(&Lock{SessionID: "s1"}); err != nil {
			t.Fatal(err)
		}
		if err := p.CreateLock(&Lock{SessionID: "s2"}); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("second CreateLock: got %v, want fs.ErrExist", err)
		}
		if l, err := p.ReadLock(); err != nil || l.SessionID != "s1" {
			t.Fatalf("ReadLock: got %+v, %v", l, err)
		}
		if err := p.WriteWarning(&Warning{SessionID: "s1", WarnedAt: testNow, Deadline: testNow.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if w, err := p.ReadWarning(); err != nil || w.TimeLeftSeconds != 60 {
			t.Fatalf("ReadWarning: got %+v, %v", w, err)
		}
		if err := p.WriteContext(ContextInput{SessionID: "s1", ProjectDir: project, Now: testNow}); err != nil {
			t.Fatal(err)
		}
		if n, err := p.AppendProgress("", ProgressEntry{Time: testNow, SessionID: "s1"}); err != nil || n < 1 {
			t.Fatalf("AppendProgress: got %d, %v", n, err)
		}
		if n, err := p.AppendProgress("claude-progress.txt", ProgressEntry{Time: testNow}); err != nil || n < 1 {
			t.Fatalf("AppendProgress to a configured file: got %d, %v", n, err)
		}
		if fs, err := p.LoadFeatures(""); err != nil || len(fs) != 2 {
			t.Fatalf("LoadFeatures: got %v, %v", fs, err)
		}
		if data, err := p.ReadConfig(); err != nil || !strings.Contains(string(data), "command") {
			t.Fatalf("ReadConfig: got %q, %v", data, err)
		}
		for _, f := range []string{SessionStateFile, HandoffFile, LockFile, WarningFile, ContextFile, ProgressFile} {
			if got := mode(t, filepath.Join(project, DirName, f)); got != 0o600 {
				t.Errorf("%s: mode %v, want 0600", f, got)
			}
		}
		if got := mode(t, filepath.Join(project, DirName)); got != 0o700 {
			t.Errorf(".sessiond: mode %v, want 0700", got)
		}
		if got := readTestFile(t, filepath.Join(project, ".git", "info", "exclude")); got != "/.sessiond/\n" {
			t.Errorf("exclude: got %q, want /.sessiond/ once", got)
		}
		for _, rm := range []func() error{p.RemoveLock, p.RemoveWarning, p.ClearSessionState, p.RemoveLock} {
			if err := rm(); err != nil {
				t.Fatal(err)
			}
		}
		if s, err := p.LoadSessionState(); s != nil || err != nil {
			t.Fatalf("after ClearSessionState: got %+v, %v, want nil, nil", s, err)
		}
		if err := os.RemoveAll(filepath.Join(project, DirName)); err != nil {
			t.Fatal(err)
		}
	}
	if got := threadSwitches.Load() - before; got != 0 {
		t.Errorf("got %d thread switches with the daemon's own rights, want 0", got)
	}
}

// TestOpenProjectUnreachable checks that a missing project and one that is
// not a directory get the same message.
func TestOpenProjectUnreachable(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	writeTestFile(t, file, "")
	for _, dir := range []string{filepath.Join(root, "missing"), file, filepath.Join(file, "below")} {
		_, err := OpenProject(dir, nil)
		if !errors.Is(err, ErrProjectUnreachable) {
			t.Fatalf("%s: got %v, want ErrProjectUnreachable", dir, err)
		}
		want := "project directory " + dir + " does not exist or is not accessible to uid "
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %q, want it to start with %q", dir, err, want)
		}
	}
}

// TestProjectPathsConfined opens project paths through both resolvers,
// openat2 and the walk used where the kernel lacks it.
func TestProjectPathsConfined(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "proj")
	writeTestFile(t, filepath.Join(base, "outside.json"), "outside")
	writeTestFile(t, filepath.Join(project, "a.json"), "a")
	writeTestFile(t, filepath.Join(project, "sub", "b.json"), "b")
	links := map[string]string{
		"link.json":       "a.json",
		"linkdir":         "sub",
		"sub/up.json":     "../a.json",
		"chain.json":      "link.json",
		"escape.json":     "../outside.json",
		"sub/escape.json": "../../outside.json",
		"abs.json":        filepath.Join(project, "a.json"),
		"absout.json":     filepath.Join(base, "outside.json"),
		"outdir":          base,
		"loop.json":       "loop.json",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(project, l)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		rel, want string
		err       error
	}{
		{rel: "a.json", want: "a"},
		{rel: "sub/b.json", want: "b"},
		{rel: "./sub/../a.json", want: "a"},
		{rel: "link.json", want: "a"},
		{rel: "chain.json", want: "a"},
		{rel: "linkdir/b.json", want: "b"},
		{rel: "linkdir/../a.json", want: "a"},
		{rel: "sub/up.json", want: "a"},
		{rel: "../outside.json", err: ErrOutsideProject},
		{rel: filepath.Join(base, "outside.json"), err: ErrOutsideProject},
		{rel: "escape.json", err: ErrOutsideProject},
		{rel: "sub/escape.json", err: ErrOutsideProject},
		{rel: "abs.json", err: ErrOutsideProject}, // absolute symlinks are refused, as RESOLVE_BENEATH does
		{rel: "absout.json", err: ErrOutsideProject},
		{rel: "outdir/outside.json", err: ErrOutsideProject},
		{rel: "loop.json", err: syscall.ELOOP},
		{rel: "missing.json", err: fs.ErrNotExist},
		{rel: "sub", err: ErrFileType},
	}
	for _, walk := range []bool{false, true} {
		forceWalk = walk
		t.Cleanup(func() { forceWalk = false })
		p, err := OpenProject(project, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			got, err := p.ReadFile(tt.rel, 100)
			switch {
			case tt.err == nil && err != nil:
				t.Errorf("walk=%v %s: %v", walk, tt.rel, err)
			case tt.err == nil && string(got) != tt.want:
				t.Errorf("walk=%v %s: got %q, want %q", walk, tt.rel, got, tt.want)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Errorf("walk=%v %s: got %v, want %v", walk, tt.rel, err, tt.err)
			case errors.Is(err, ErrOutsideProject) && !strings.Contains(err.Error(), "refused: "+tt.rel+" leaves the project "+project):
				t.Errorf("walk=%v %s: got %q, want it to say the path leaves the project", walk, tt.rel, err)
			}
		}
	}
}

func TestCheckRelativePath(t *testing.T) {
	for _, ok := range []string{"", "claude-progress.txt", "docs/progress.md", "./a/../b", ".sessiond/progress.md"} {
		if err := CheckRelativePath("progress_file", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"/etc/x", "../x", "a/../../x", "..", "a\x00b"} {
		err := CheckRelativePath("progress_file", bad)
		if err == nil || !strings.HasPrefix(err.Error(), "progress_file") {
			t.Errorf("%q: got %v, want an error naming progress_file", bad, err)
		}
	}
}

// TestAppendProgressThroughLink checks that a progress log that is a
// symlink inside the project is written at its target, the link kept.
func TestAppendProgressThroughLink(t *testing.T) {
	for _, walk := range []bool{false, true} {
		forceWalk = walk
		t.Cleanup(func() { forceWalk = false })
		project := t.TempDir()
		writeTestFile(t, filepath.Join(project, "docs", "progress.md"), "# mine\n")
		if err := os.Symlink("docs/progress.md", filepath.Join(project, "claude-progress.txt")); err != nil {
			t.Fatal(err)
		}
		p, err := OpenProject(project, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendProgress("claude-progress.txt", ProgressEntry{Time: testNow, SessionID: "s1"}); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(project, "claude-progress.txt")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("walk=%v: the link was replaced: %v", walk, err)
		}
		if got := readTestFile(t, filepath.Join(project, "docs", "progress.md")); !strings.HasPrefix(got, "# mine\n") || !strings.Contains(got, "Session s1") {
			t.Errorf("walk=%v: target: got %q", walk, got)
		}
		if _, err := p.AppendProgress("missing/progress.md", ProgressEntry{Time: testNow}); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("walk=%v: a log in a missing directory: got %v, want fs.ErrNotExist", walk, err)
		}
	}
}

func TestExisting(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "a.txt"), "a")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "sub", "b.txt"), "b")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	p, err := OpenProject(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Existing([]string{"a.txt", "gone.tmp", "sub/b.txt", "out", "../x"})
	if strings.Join(got, ",") != "a.txt,sub/b.txt,out" {
		t.Errorf("existing = %v", got)
	}
}

// TestProjectHold: the operations inside a Hold share one opening of the
// project directory and of its .sessiond (a rename of the project's path
// during it does not lead them elsewhere), work as they do outside one,
// and leave no descriptor open after it.
func TestProjectHold(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "p")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := OpenProject(project, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.EnsureStateDir(); err != nil {
		t.Fatal(err)
	}
	// The descriptors open, from /proc/self/fd: -1 where there is none
	// (macOS), and then only the descriptor check is left out.
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil && runtime.GOOS != "linux" {
			return -1
		} else if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()
	moved := filepath.Join(base, "moved")
	err = p.Hold(func(q *Project) error {
		if err := q.SaveSessionState(&SessionState{ProgressPct: 25}); err != nil {
			return err
		}
		// The path now names another directory; the held one is still
		// the project.
		if err := os.Rename(project, moved); err != nil {
			return err
		}
		if err := os.Mkdir(project, 0o755); err != nil {
			return err
		}
		if s, err := q.LoadSessionState(); err != nil || s == nil || s.ProgressPct != 25 {
			t.Errorf("LoadSessionState in the Hold: %+v, %v; want what the Hold wrote", s, err)
		}
		if err := q.SaveHandoff(&Handoff{SessionID: "s1"}); err != nil {
			return err
		}
		if _, err := q.AppendProgress("", ProgressEntry{SessionID: "s1", Time: time.Now()}); err != nil {
			return err
		}
		return q.RemoveWarning()
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := fds(); n != before && before >= 0 {
		t.Errorf("%d descriptors open after the Hold, %d before", n, before)
	}
	for _, f := range []string{SessionStateFile, HandoffFile, ProgressFile} {
		if _, err := os.Stat(filepath.Join(moved, DirName, f)); err != nil {
			t.Errorf("%s not in the directory the Hold opened: %v", f, err)
		}
		if _, err := os.Stat(filepath.Join(project, DirName, f)); err == nil {
			t.Errorf("%s in the directory the path names now", f)
		}
	}
	// Outside a Hold, each operation walks the path again.
	if err := p.SaveSessionState(&SessionState{ProgressPct: 75}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(project, DirName, SessionStateFile)); err != nil {
		t.Errorf("after the Hold: %v", err)
	}
}
