package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessiond/sessiond/daemon/identity"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestNestedNewDirectories(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	w := watchDir(t, h, root, Options{})
	if got := w.Stats().Dirs; got != 1 {
		t.Fatalf("Dirs = %d, want 1", got)
	}
	// The file is made before any watch on a/b/c can land: the rescan of the
	// new directory must find it.
	mkfile(t, filepath.Join(root, "a/b/c/deep.txt"), "x")
	st := waitChanged(t, w, "a/b/c/deep.txt")
	waitFor(t, "4 dirs watched", func() bool { return w.Stats().Dirs == 4 })
	if st.LastFileEdited != "a/b/c/deep.txt" {
		t.Errorf("LastFileEdited = %q, want a/b/c/deep.txt", st.LastFileEdited)
	}
	// And the new directories are watched: a later file comes by its event.
	mkfile(t, filepath.Join(root, "a/b/c/later.txt"), "y")
	waitChanged(t, w, "a/b/c/later.txt")
}

// ignoreTree lays out a tree with root and nested .gitignore files.
func ignoreTree(t *testing.T, root string) {
	mkfile(t, filepath.Join(root, ".gitignore"), "node_modules/\n*.log\n!keep.log\n")
	mkfile(t, filepath.Join(root, "sub/.gitignore"), "secret.txt\n/gen/\n")
	mkdirs(t, root, "node_modules/a/b", "node_modules/c", "src/pkg", "sub/gen/x", "sub/deep/gen", ".sessiond")
}

func TestIgnores(t *testing.T) {
	for _, repo := range []string{"none", "git", "refused", "prepared"} {
		t.Run("repo="+repo, func(t *testing.T) {
			h, logs := newHub(t)
			root := t.TempDir()
			var opt Options
			switch repo {
			case "none":
				if p := h.Prepare(root, opt); p != nil {
					t.Errorf("Prepare outside a repository began git's view of it")
				}
			case "git":
				gitInit(t, root)
			case "prepared":
				// Git's view begun ahead, which the watch takes over.
				gitInit(t, root)
				ignoreTree(t, root)
				if opt.Prepared = h.Prepare(root, opt); opt.Prepared == nil {
					t.Fatal("Prepare in a repository began nothing")
				}
			case "refused":
				// A repository by its layout that git refuses: the
				// ignore files still hold, without it.
				gitInit(t, root)
				runGit(t, root, "config", "core.repositoryformatversion", "99")
			}
			ignoreTree(t, root)
			w := watchDir(t, h, root, opt)
			if p := opt.Prepared; p != nil && w.ign != p.ign {
				t.Errorf("the watch did not take over the prepared view")
			}
			if warned := logs.FilterMessage("not a usable git repository; using ignore files without it").Len(); (repo == "refused") != (warned > 0) {
				t.Errorf("warned of an unusable repository %d times", warned)
			}
			// root, src, src/pkg, sub, sub/deep, sub/deep/gen ("/gen/" is anchored
			// to sub); never node_modules, sub/gen, .git or .sessiond.
			if got := w.Stats().Dirs; got != 6 {
				t.Errorf("Dirs = %d, want 6", got)
			}
			for _, f := range []string{
				"a.log", "sub/secret.txt", "node_modules/a/b/x.js", "sub/gen/x/y.go",
				".sessiond/state.json", ".git/objects/zz", "src/pkg/debug.log",
			} {
				mkfile(t, filepath.Join(root, f), "ignored")
			}
			want := []string{"keep.log", "secret.txt", "src/pkg/main.go", "sub/deep/gen/z.go", "zz-marker"}
			for _, f := range want {
				mkfile(t, filepath.Join(root, f), "seen")
			}
			st := waitChanged(t, w, "zz-marker")
			if !slices.Equal(st.FilesChanged, want) {
				t.Errorf("FilesChanged = %q, want %q", st.FilesChanged, want)
			}
			// A new ignored directory is not watched either.
			mkdirs(t, root, "node_modules/new", "src/build.log")
			mkfile(t, filepath.Join(root, "zz-marker2"), "")
			waitChanged(t, w, "zz-marker2")
			if got := w.Stats().Dirs; got != 6 {
				t.Errorf("Dirs after new ignored dirs = %d, want 6", got)
			}
		})
	}
}

// TestTrackedFilesInIgnoredDirectories: a tracked file in a directory
// that ignore rules match (target/, build/) counts when it is edited, as
// it does for a checkpoint; the directory's untracked files and
// directories still do not.
func TestTrackedFilesInIgnoredDirectories(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	gitInit(t, root)
	mkfile(t, filepath.Join(root, ".gitignore"), "target/\nbuild/\n")
	mkfile(t, filepath.Join(root, "target/tracked.rs"), "v1")
	mkfile(t, filepath.Join(root, "build/deep/keep.txt"), "v1")
	mkfile(t, filepath.Join(root, "build/other/out.o"), "untracked")
	runGit(t, root, "add", "-f", ".gitignore", "target/tracked.rs", "build/deep/keep.txt")
	runGit(t, root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "tracked in ignored directories")
	w := watchDir(t, h, root, Options{})
	// root, target, build, build/deep; never build/other.
	if got := w.Stats().Dirs; got != 4 {
		t.Errorf("Dirs = %d, want 4", got)
	}
	mkfile(t, filepath.Join(root, "target/tracked.rs"), "v2")
	mkfile(t, filepath.Join(root, "build/deep/keep.txt"), "v2")
	mkfile(t, filepath.Join(root, "target/debug.o"), "untracked")
	mkfile(t, filepath.Join(root, "build/deep/new.o"), "untracked")
	mkfile(t, filepath.Join(root, "build/other/out.o"), "untracked, again")
	mkfile(t, filepath.Join(root, "zz-marker"), "")
	st := waitChanged(t, w, "zz-marker")
	if want := []string{"build/deep/keep.txt", "target/tracked.rs", "zz-marker"}; !slices.Equal(st.FilesChanged, want) {
		t.Errorf("FilesChanged = %q, want %q", st.FilesChanged, want)
	}
}

func TestExtraIgnorePatterns(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkdirs(t, root, "dist/js", "sub/dist", "sub/only")
	w := watchDir(t, h, root, Options{Ignore: []string{"dist/", "*.tmp", "/only-root.txt", "# a comment", "", "/sub/only/"}})
	// root, sub.
	if got := w.Stats().Dirs; got != 2 {
		t.Errorf("Dirs = %d, want 2", got)
	}
	for _, f := range []string{"x.tmp", "only-root.txt", "dist/js/a.js", "sub/y.tmp"} {
		mkfile(t, filepath.Join(root, f), "")
	}
	mkfile(t, filepath.Join(root, "sub/only-root.txt"), "")
	mkfile(t, filepath.Join(root, "zz"), "")
	st := waitChanged(t, w, "zz")
	if want := []string{"sub/only-root.txt", "zz"}; !slices.Equal(st.FilesChanged, want) {
		t.Errorf("FilesChanged = %q, want %q", st.FilesChanged, want)
	}
}

// A project in a subdirectory of a repository: the repository's .gitignore
// applies, and anchored extra patterns stay anchored to the project.
func TestProjectInsideRepository(t *testing.T) {
	h, _ := newHub(t)
	repo := t.TempDir()
	gitInit(t, repo)
	mkfile(t, filepath.Join(repo, ".gitignore"), "*.log\n")
	root := filepath.Join(repo, "proj")
	mkdirs(t, root, "build", "src/build")
	w := watchDir(t, h, root, Options{Ignore: []string{"/build/"}})
	// proj, src, src/build.
	if got := w.Stats().Dirs; got != 3 {
		t.Errorf("Dirs = %d, want 3", got)
	}
	mkfile(t, filepath.Join(root, "a.log"), "")
	mkfile(t, filepath.Join(root, "src/build/out.o"), "")
	st := waitChanged(t, w, "src/build/out.o")
	if want := []string{"src/build/out.o"}; !slices.Equal(st.FilesChanged, want) {
		t.Errorf("FilesChanged = %q, want %q", st.FilesChanged, want)
	}
}

// A nested repository has its own rules, and git is not asked about its
// paths through the outer one (which would refuse a submodule's).
func TestNestedRepository(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	gitInit(t, root)
	inner := filepath.Join(root, "vendor/lib")
	mkdirs(t, inner)
	gitInit(t, inner)
	mkfile(t, filepath.Join(inner, ".gitignore"), "out/\n")
	mkdirs(t, inner, "out/o", "src")
	w := watchDir(t, h, root, Options{})
	// root, vendor, vendor/lib, vendor/lib/src.
	if got := w.Stats().Dirs; got != 4 {
		t.Errorf("Dirs = %d, want 4", got)
	}
	mkfile(t, filepath.Join(inner, "src/a.go"), "")
	waitChanged(t, w, "vendor/lib/src/a.go")
}

func TestGitignoreChangeTakesEffect(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkdirs(t, root, "gen/a", "src")
	w := watchDir(t, h, root, Options{})
	if got := w.Stats().Dirs; got != 4 {
		t.Fatalf("Dirs = %d, want 4", got)
	}
	mkfile(t, filepath.Join(root, ".gitignore"), "gen/\n")
	waitFor(t, "gen unwatched", func() bool { return w.Stats().Dirs == 2 })
	mkfile(t, filepath.Join(root, "gen/a/x"), "")
	mkfile(t, filepath.Join(root, "marker"), "")
	st := waitChanged(t, w, "marker")
	if slices.Contains(st.FilesChanged, "gen/a/x") {
		t.Errorf("gen/a/x reported after gen/ was ignored: %q", st.FilesChanged)
	}
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "gen watched again", func() bool { return w.Stats().Dirs == 4 })
	mkfile(t, filepath.Join(root, "gen/a/y"), "")
	waitChanged(t, w, "gen/a/y")
}

func TestCoalescing(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	var calls atomic.Int32
	var lastMu sync.Mutex
	var last Activity
	w := watchDir(t, h, root, Options{Coalesce: 200 * time.Millisecond, OnActivity: func(a Activity) {
		calls.Add(1)
		lastMu.Lock()
		last = a
		lastMu.Unlock()
	}})
	f, err := os.Create(filepath.Join(root, "hot.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := fmt.Fprintf(f, "line %d\n", i); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st := waitChanged(t, w, "hot.txt")
	if !slices.Equal(st.FilesChanged, []string{"hot.txt"}) || st.FilesChangedMore != 0 {
		t.Errorf("FilesChanged = %q (+%d), want [hot.txt]", st.FilesChanged, st.FilesChangedMore)
	}
	waitFor(t, "an activity callback", func() bool { return calls.Load() > 0 })
	// 101 events in far less than the window: one batch (a slow machine may
	// split it, never into many).
	if n := calls.Load(); n > 3 {
		t.Errorf("OnActivity called %d times for one burst, want 1", n)
	}
	lastMu.Lock()
	defer lastMu.Unlock()
	if last.Path != "hot.txt" || last.Time.IsZero() {
		t.Errorf("last activity = %+v, want hot.txt with a time", last)
	}
}

func TestBoundedChangedSet(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	w := watchDir(t, h, root, Options{MaxFiles: 5})
	var all []string
	for i := range 12 {
		name := fmt.Sprintf("f%02d", i)
		all = append(all, name)
		mkfile(t, filepath.Join(root, name), "")
	}
	var st Stats
	waitFor(t, "12 changes counted", func() bool {
		st = w.Stats()
		return len(st.FilesChanged)+st.FilesChangedMore == 12
	})
	if len(st.FilesChanged) != 5 || st.FilesChangedMore != 7 {
		t.Fatalf("got %d files + %d more, want 5 + 7", len(st.FilesChanged), st.FilesChangedMore)
	}
	// Writing again to a file counted beyond the bound does not count it twice.
	var extra string
	for _, f := range all {
		if !slices.Contains(st.FilesChanged, f) {
			extra = f
			break
		}
	}
	before := st.LastActivity
	mkfile(t, filepath.Join(root, extra), "again")
	waitFor(t, "the rewrite seen", func() bool { return w.Stats().LastActivity.After(before) })
	if got := w.Stats().FilesChangedMore; got != 7 {
		t.Errorf("FilesChangedMore = %d after rewriting %s, want 7", got, extra)
	}
}

func TestChangedSince(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkfile(t, filepath.Join(root, "old.txt"), "")
	w := watchDir(t, h, root, Options{})
	if w.ChangedSince(time.Time{}) {
		t.Error("ChangedSince(zero) = true before any change")
	}
	if st := w.Stats(); !st.LastActivity.IsZero() || len(st.FilesChanged) != 0 {
		t.Errorf("stats before any change = %+v", st)
	}
	t0 := time.Now()
	mkfile(t, filepath.Join(root, "new.txt"), "")
	waitFor(t, "ChangedSince(t0)", func() bool { return w.ChangedSince(t0) })
	t1 := time.Now()
	if w.ChangedSince(t1) {
		t.Error("ChangedSince(after the change) = true")
	}
}

// A real inotify queue overflow: the hub's reader is held while more events
// than fs.inotify.max_queued_events are made, so the kernel drops the tail,
// and the file made last is found only by the rescan.
func TestOverflowRescan(t *testing.T) {
	if readSysctl("max_queued_events") > 100000 {
		t.Skip("max_queued_events too large to overflow quickly")
	}
	h, logs := newHub(t)
	root := t.TempDir()
	mkdirs(t, root, "d")
	w := watchDir(t, h, root, Options{})
	mark := changesT(t, w, Mark{}).Mark
	a, err := os.Create(filepath.Join(root, "d/a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Create(filepath.Join(root, "d/b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Twice the kernel queue: fsnotify holds one read buffer of events too.
	n := 2 * readSysctl("max_queued_events")
	h.mu.Lock() // the reader blocks in dispatch; the kernel queue fills
	for i := 0; i < n/2+1; i++ {
		// Alternate files: the kernel merges identical consecutive events.
		_, _ = a.Write([]byte{'a'})
		_, _ = b.Write([]byte{'b'})
	}
	mkfile(t, filepath.Join(root, "d/lost-in-overflow.txt"), "")
	h.mu.Unlock()
	waitChanged(t, w, "d/lost-in-overflow.txt", "d/a", "d/b")
	waitFor(t, "the overflow logged", func() bool { return logged(logs, "overflow") })
	// The record of changes since before the overflow is incomplete: an
	// incremental checkpoint must not trust it.
	ch := changesT(t, w, mark)
	if ch.Complete || !strings.Contains(ch.Incomplete, "overflow") {
		t.Errorf("Changes across the overflow = complete %v (%s), want incomplete", ch.Complete, ch.Incomplete)
	}
	// The watch still works after it, and the record since is complete.
	mkfile(t, filepath.Join(root, "d/after.txt"), "")
	waitChanged(t, w, "d/after.txt")
	if after := changesT(t, w, ch.Mark); !after.Complete || !slices.Contains(after.Paths, "d/after.txt") {
		t.Errorf("Changes after the overflow = %+v", after)
	}
}

// The rescan the overflow handler asks for, with the events of the changes
// kept from the watch: new files found, vanished directories forgotten, and
// files untouched since the start not counted.
func TestFullRescanReconciles(t *testing.T) {
	h, _ := newHub(t)
	root, probeRoot := t.TempDir(), t.TempDir()
	mkdirs(t, root, "gone/x", "keep")
	mkfile(t, filepath.Join(root, "keep/untouched.txt"), "")
	// Rescans allow for the file system's coarse clock: start the watch
	// clearly after the file was written.
	waitFor(t, "the file's time to age", func() bool {
		fi, err := os.Stat(filepath.Join(root, "keep/untouched.txt"))
		return err == nil && time.Since(changeTime(fi)) > 3*fsTimeSlack
	})
	w := watchDir(t, h, root, Options{})
	probe := watchDir(t, h, probeRoot, Options{})
	if got := w.Stats().Dirs; got != 4 {
		t.Fatalf("Dirs = %d, want 4", got)
	}
	// Take w's directories out of the dispatch table, as if its events were lost.
	h.mu.Lock()
	saved := make(map[string][]*Watch)
	for dir, owners := range h.owners {
		if slices.Contains(owners, w) {
			saved[dir] = owners
			delete(h.owners, dir)
		}
	}
	h.mu.Unlock()
	if err := os.RemoveAll(filepath.Join(root, "gone")); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(root, "keep/new.txt"), "")
	// inotify keeps order: once the probe's event is through, so are w's.
	mkfile(t, filepath.Join(probeRoot, "probe"), "")
	waitChanged(t, probe, "probe")
	h.mu.Lock()
	maps.Copy(h.owners, saved)
	h.mu.Unlock()
	if st := w.Stats(); len(st.FilesChanged) != 0 {
		t.Fatalf("changes seen without events: %q", st.FilesChanged)
	}

	w.requestRescan()
	st := waitChanged(t, w, "keep/new.txt")
	waitFor(t, "gone forgotten", func() bool { return w.Stats().Dirs == 2 })
	if slices.Contains(st.FilesChanged, "keep/untouched.txt") {
		t.Errorf("a file untouched since the start was counted: %q", st.FilesChanged)
	}
}

// limitAdd wraps the real add with a fake inotify limit for paths under a
// prefix, which can be lifted.
type limitAdd struct {
	real   func(string) error
	prefix string
	errno  syscall.Errno
	lifted atomic.Bool
}

func (l *limitAdd) add(abs string) error {
	if !l.lifted.Load() && (abs == l.prefix || strings.HasPrefix(abs, l.prefix+"/")) {
		return fmt.Errorf("fake: %w", l.errno)
	}
	return l.real(abs)
}

func TestWatchLimitFallback(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EMFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			h, logs := newHub(t)
			root := t.TempDir()
			mkdirs(t, root, "a", "deg/x")
			mkfile(t, filepath.Join(root, "deg/x/old.txt"), "")
			lim := &limitAdd{real: h.addWatch, prefix: filepath.Join(root, "deg"), errno: errno}
			h.addWatch = lim.add
			w := watchDir(t, h, root, Options{Rescan: 50 * time.Millisecond})
			st := w.Stats()
			if st.Dirs != 2 || st.Polled != 2 || !st.Degraded {
				t.Fatalf("Dirs %d Polled %d Degraded %v, want 2, 2, true", st.Dirs, st.Polled, st.Degraded)
			}
			fix := "sysctl fs.inotify.max_user_watches="
			if errno == syscall.EMFILE {
				fix = "sysctl fs.inotify.max_user_instances="
			}
			if !logged(logs, fix) {
				t.Errorf("the log does not name %q", fix)
			}
			// Changes in polled directories are found by the rescans...
			mkfile(t, filepath.Join(root, "deg/x/new.txt"), "")
			mkfile(t, filepath.Join(root, "deg/y/in-new-dir.txt"), "")
			if err := os.Remove(filepath.Join(root, "deg/x/old.txt")); err != nil {
				t.Fatal(err)
			}
			waitChanged(t, w, "deg/x/new.txt", "deg/y/in-new-dir.txt", "deg/x/old.txt")
			// The rescan counts the new directory as it finishes, after it
			// has told of the files in it.
			waitFor(t, "the new directory polled", func() bool { return w.Stats().Polled == 3 })
			// ...the watched part still works by events...
			mkfile(t, filepath.Join(root, "a/f"), "")
			waitChanged(t, w, "a/f")
			// ...and once the limit is lifted, the rescans watch them again.
			lim.lifted.Store(true)
			waitFor(t, "no longer degraded", func() bool { st := w.Stats(); return !st.Degraded && st.Dirs == 5 })
		})
	}
}

func TestProjectRootRemoved(t *testing.T) {
	for _, how := range []string{"remove", "rename"} {
		t.Run(how, func(t *testing.T) {
			h, logs := newHub(t)
			parent := t.TempDir()
			root := filepath.Join(parent, "proj")
			mkdirs(t, root, "a/b")
			w := watchDir(t, h, root, Options{})
			mkfile(t, filepath.Join(root, "a/b/f"), "")
			waitChanged(t, w, "a/b/f")
			var err error
			if how == "remove" {
				err = os.RemoveAll(root)
			} else {
				err = os.Rename(root, filepath.Join(parent, "moved"))
			}
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "RootGone", func() bool { return w.Stats().RootGone })
			st := w.Stats()
			if st.Dirs != 0 || !slices.Contains(st.FilesChanged, "a/b/f") {
				t.Errorf("stats after the root went = %+v", st)
			}
			if !logged(logs, "project directory removed") {
				t.Error("the removal was not logged")
			}
			h.mu.RLock()
			owned := len(h.owners)
			h.mu.RUnlock()
			if owned != 0 {
				t.Errorf("%d directories still owned after the root went", owned)
			}
			if err := w.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// Running as root, chmod 000 denies nothing, so the errors a user's daemon
// would get are injected through the hub's add and list seams.
func TestPermissionDenied(t *testing.T) {
	h, logs := newHub(t)
	root := t.TempDir()
	mkdirs(t, root, "ok", "noadd/sub", "nolist/sub")
	realAdd, realRead := h.addWatch, h.readDir
	h.addWatch = func(abs string) error {
		if strings.HasPrefix(abs, filepath.Join(root, "noadd")) {
			return fmt.Errorf("fake: %w", syscall.EACCES)
		}
		return realAdd(abs)
	}
	h.readDir = func(abs string) ([]fs.DirEntry, error) {
		if abs == filepath.Join(root, "nolist") {
			return nil, &os.PathError{Op: "open", Path: abs, Err: syscall.EACCES}
		}
		return realRead(abs)
	}
	w := watchDir(t, h, root, Options{})
	// root, ok, nolist (watched, but not listed, so not its sub).
	if got := w.Stats().Dirs; got != 3 {
		t.Errorf("Dirs = %d, want 3", got)
	}
	if !logged(logs, "cannot watch directory") || !logged(logs, "cannot list directory") {
		t.Error("the denied directories were not logged")
	}
	mkfile(t, filepath.Join(root, "ok/f"), "")
	waitChanged(t, w, "ok/f")
}

func TestSymlinksNotFollowed(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkdirs(t, root, "a")
	for link, target := range map[string]string{"a/loop": "..", "self": ".", "abs": "/"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	w := watchDir(t, h, root, Options{})
	if got := w.Stats().Dirs; got != 2 {
		t.Errorf("Dirs = %d, want 2", got)
	}
	if err := os.Symlink(".", filepath.Join(root, "a/again")); err != nil {
		t.Fatal(err)
	}
	st := waitChanged(t, w, "a/again")
	if st.Dirs != 2 {
		t.Errorf("Dirs after a new symlink loop = %d, want 2", st.Dirs)
	}
}

func TestFileReplacedByDirectory(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkfile(t, filepath.Join(root, "x"), "file")
	mkdirs(t, root, "d")
	w := watchDir(t, h, root, Options{})
	if err := os.Remove(filepath.Join(root, "x")); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(root, "x/inside"), "")
	// And a directory replaced by a file.
	if err := os.Remove(filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(root, "d"), "now a file")
	waitChanged(t, w, "x/inside", "d")
	waitFor(t, "root and x watched", func() bool { return w.Stats().Dirs == 2 })
	mkfile(t, filepath.Join(root, "x/later"), "")
	waitChanged(t, w, "x/later")
}

func TestDirectoryRenamedAndRemoved(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkdirs(t, root, "m/n", "gone/x/y")
	w := watchDir(t, h, root, Options{})
	if got := w.Stats().Dirs; got != 6 {
		t.Fatalf("Dirs = %d, want 6", got)
	}
	if err := os.RemoveAll(filepath.Join(root, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "m"), filepath.Join(root, "r")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "root, r, r/n watched", func() bool { return w.Stats().Dirs == 3 })
	// Events under the moved tree carry its new name.
	mkfile(t, filepath.Join(root, "r/n/f"), "")
	st := waitChanged(t, w, "r/n/f")
	for _, f := range st.FilesChanged {
		if strings.HasPrefix(f, "m/") {
			t.Errorf("a change under the old name: %q", f)
		}
	}
}

// Two projects, one inside the other, share directories of one hub.
func TestOverlappingProjects(t *testing.T) {
	h, _ := newHub(t)
	outer := t.TempDir()
	inner := filepath.Join(outer, "inner")
	mkdirs(t, inner, "src")
	wo := watchDir(t, h, outer, Options{})
	wi := watchDir(t, h, inner, Options{})
	mkfile(t, filepath.Join(inner, "src/a"), "")
	waitChanged(t, wo, "inner/src/a")
	waitChanged(t, wi, "src/a")
	if err := wi.Close(); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(inner, "src/b"), "")
	waitChanged(t, wo, "inner/src/b")
}

func TestWatchErrors(t *testing.T) {
	h, _ := newHub(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	mkfile(t, file, "")
	for _, root := range []string{"relative/dir", filepath.Join(dir, "missing"), file} {
		if w, err := h.Watch(root, Options{}); err == nil {
			_ = w.Close()
			t.Errorf("Watch(%q) succeeded, want an error", root)
		} else if !strings.Contains(err.Error(), root) {
			t.Errorf("Watch(%q) error %q does not name the path", root, err)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Watch(dir, Options{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Watch after Close: %v, want ErrClosed", err)
	}
}

func TestHubCloseStopsWatches(t *testing.T) {
	h, _ := newHub(t)
	var ws []*Watch
	for range 3 {
		root := t.TempDir()
		mkdirs(t, root, "a", "b")
		w, err := h.Watch(root, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
		mkfile(t, filepath.Join(root, "a/f"), "")
	}
	waitChanged(t, ws[0], "a/f")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Errorf("Close after Hub.Close: %v", err)
		}
	}
	if _, err := os.Stat(h.tmp); h.tmp != "" && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary dir %s left: %v", h.tmp, err)
	}
}

func TestAlwaysIgnored(t *testing.T) {
	for p, want := range map[string]bool{
		".git": true, ".git/HEAD": true, "sub/.git/x": true, ".sessiond/a": true,
		"a.git": false, "src/.gitignore": false, "x/.gitx/y": false, "": false,
	} {
		if got := alwaysIgnored(p); got != want {
			t.Errorf("alwaysIgnored(%q) = %v, want %v", p, got, want)
		}
	}
}

// A path that makes git die (beyond a symlink) is answered "not ignored" and
// the others still get their answers.
func TestCheckerSurvivesGitDying(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkfile(t, filepath.Join(root, ".gitignore"), "*.log\n")
	if err := os.Symlink("/tmp", filepath.Join(root, "lnk")); err != nil {
		t.Fatal(err)
	}
	ig := newIgnorer(h, func() *zap.Logger { return h.log }, root, nil, "t", nil, nil)
	defer ig.close()
	got := ig.ignored([]string{"a.log", "lnk/x.log", "b.log", "c.txt"})
	if want := []bool{true, false, true, false}; !slices.Equal(got, want) {
		t.Errorf("ignored = %v, want %v", got, want)
	}
}

// Without any inotify instance (the per-user limit is reached) the hub still
// works, by rescans alone, and says which sysctl fixes it.
func TestNoInotifyInstance(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	h, err := newHubWith(zap.New(core), func() (*fsnotify.Watcher, error) {
		return nil, fmt.Errorf("fake: %w", syscall.EMFILE)
	})
	if err != nil {
		t.Fatalf("newHubWith: %v", err)
	}
	defer h.Close()
	if !logged(logs, "sysctl fs.inotify.max_user_instances=") {
		t.Error("the log does not name the sysctl")
	}
	root := t.TempDir()
	mkdirs(t, root, "a/b")
	w := watchDir(t, h, root, Options{Rescan: 50 * time.Millisecond})
	if st := w.Stats(); st.Dirs != 0 || st.Polled != 3 || !st.Degraded {
		t.Fatalf("stats = %+v, want 3 polled dirs", st)
	}
	mkfile(t, filepath.Join(root, "a/b/f"), "")
	mkfile(t, filepath.Join(root, "a/new/g"), "")
	waitChanged(t, w, "a/b/f", "a/new/g")
}

// Under a root daemon, a user's project that is no git work tree is still
// checked against its ignore files and patterns: the user's directory in
// the hub's own is the daemon's to make and the user's to write in.
func TestIgnoresOfAnotherUser(t *testing.T) {
	h, logs, user, root := otherUser(t, 54321, "checks ignores as another uid")
	mkfile(t, filepath.Join(root, ".gitignore"), "*.log\n")
	for _, p := range []string{root, filepath.Join(root, ".gitignore")} {
		if err := os.Chown(p, user.UID, user.GID); err != nil {
			t.Fatal(err)
		}
	}
	ig := newIgnorer(h, func() *zap.Logger { return h.log }, root, []string{"gen/"}, "t", user, nil)
	defer ig.close()
	got := ig.ignored([]string{"a.log", "gen/x.go", "b.txt"})
	if want := []bool{true, true, false}; !slices.Equal(got, want) {
		t.Errorf("ignored = %v, want %v; logs: %v", got, want, logs.All())
	}
	dir := filepath.Join(h.tmp, "u54321")
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != user.UID || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: uid %d mode %v, want the user's, 0700", dir, st.Uid, fi.Mode().Perm())
	}
	// A second checker of the same user finds the directory there.
	ig2 := newIgnorer(h, func() *zap.Logger { return h.log }, root, nil, "t2", user, nil)
	defer ig2.close()
	if got := ig2.ignored([]string{"c.log"}); !slices.Equal(got, []bool{true}) {
		t.Errorf("second checker: ignored = %v, want [true]; logs: %v", got, logs.All())
	}
}

// TestPreparedNotTaken: a prepared view that no watch takes (let go, or
// begun for other patterns) has its git stopped, and a watch with other
// patterns answers by its own.
func TestPreparedNotTaken(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	gitInit(t, root)
	mkfile(t, filepath.Join(root, "a.go"), "")
	if p := h.Prepare(root, Options{}); p != nil {
		t.Error("Prepare began git's view of a repository with no directory to ask about")
	}
	ignoreTree(t, root)
	coprocess := func(p *Prepared) *os.Process {
		t.Helper()
		<-p.ready
		c := p.ign.domains[""]
		if c == nil || c.cmd == nil {
			t.Fatal("the prepared view has no check-ignore running")
		}
		return c.cmd.Process
	}
	gone := func(pr *os.Process) {
		t.Helper()
		waitFor(t, "the prepared check-ignore to end", func() bool {
			return syscall.Kill(pr.Pid, 0) != nil
		})
	}

	p := h.Prepare(root, Options{})
	pr := coprocess(p)
	p.Close()
	p.Close()
	gone(pr)
	if w := watchDir(t, h, root, Options{Prepared: p}); w.ign == p.ign {
		t.Error("a watch took a prepared view let go")
	}

	p = h.Prepare(root, Options{})
	pr = coprocess(p)
	w := watchDir(t, h, root, Options{Ignore: []string{"src/"}, Prepared: p})
	if w.ign == p.ign {
		t.Error("a watch with other patterns took the prepared view")
	}
	gone(pr)
	// root, sub, sub/deep, sub/deep/gen: src by the watch's own pattern.
	if got := w.Stats().Dirs; got != 4 {
		t.Errorf("Dirs = %d, want 4", got)
	}
}

// TestPreparedAfterExcludeChange: info/exclude changed between the
// prepared view and its watch (a session's start adds .sessiond there):
// the watch follows the file as it is, from its first scan.
func TestPreparedAfterExcludeChange(t *testing.T) {
	h, logs := newHub(t)
	root := t.TempDir()
	gitInit(t, root)
	ignoreTree(t, root)
	p := h.Prepare(root, Options{})
	<-p.ready
	mkfile(t, filepath.Join(root, ".git", "info", "exclude"), "/src/\n")
	w := watchDir(t, h, root, Options{Prepared: p})
	// root, sub, sub/deep, sub/deep/gen: src by info/exclude.
	if got := w.Stats().Dirs; got != 4 {
		t.Errorf("Dirs = %d, want 4", got)
	}
	mkfile(t, filepath.Join(root, "src", "pkg", "x.go"), "")
	mkfile(t, filepath.Join(root, "zz-marker"), "")
	if st := waitChanged(t, w, "zz-marker"); !slices.Equal(st.FilesChanged, []string{"zz-marker"}) {
		t.Errorf("FilesChanged = %q, want [zz-marker]", st.FilesChanged)
	}
	if logged(logs, "info/exclude changed") {
		t.Error("the watch re-read the tree for a change made before it began")
	}
}

// TestValidRepoAsTheUser: the watcher asks git whether a repository is one
// (a gitfile's, here) with the project user's rights, not the daemon's: a
// repository whose config includes a file only root may read is one the
// user's git refuses, and its ignore files apply without it.
func TestValidRepoAsTheUser(t *testing.T) {
	h, logs, user, base := otherUser(t, 54322, "runs git as another uid")
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(base, "root-only", "config")
	mkfile(t, secret, "[core]\n")
	if err := os.Chmod(filepath.Dir(secret), 0o700); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "work")
	runGit(t, base, "init", "-q", "--separate-git-dir", filepath.Join(base, "repo.git"), root)
	runGit(t, root, "config", "include.path", secret)
	mkfile(t, filepath.Join(root, ".gitignore"), "*.log\n")
	for _, top := range []string{root, filepath.Join(base, "repo.git")} {
		err := filepath.WalkDir(top, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, user.UID, user.GID)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ig := newIgnorer(h, func() *zap.Logger { return h.log }, root, nil, "t", user, nil)
	defer ig.close()
	if got := ig.ignored([]string{"a.log", "b.txt"}); !slices.Equal(got, []bool{true, false}) {
		t.Errorf("ignored = %v, want [true false]; logs: %v", got, logs.All())
	}
	if !logged(logs, "not a usable git repository") {
		t.Errorf("git read the repository with rights the user has not: %v", logs.All())
	}
}

// otherUser fails the test unless it runs as root (the tests run as root
// here and in CI: a skip would prove nothing), and returns a hub, its
// logs, the user uid (a throwaway id, no account) and a directory outside
// the test's temporary one, removed at its end.
func otherUser(t *testing.T, uid int, why string) (*Hub, *observer.ObservedLogs, *identity.User, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("tested as root, as the tests run here and in CI: " + why)
	}
	h, logs := newHub(t)
	dir, err := os.MkdirTemp("", "watch-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return h, logs, &identity.User{UID: uid, GID: uid}, dir
}

// TestTrackedFilesInLeftOutDirectories: a left-out directory (dist,
// node_modules) that holds tracked files is watched where they are, and an
// edit of one counts, as it does for a checkpoint; its untracked files and
// a left-out directory with nothing tracked still do not.
func TestTrackedFilesInLeftOutDirectories(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	gitInit(t, root)
	mkfile(t, filepath.Join(root, "dist/lib.js"), "v1")
	mkfile(t, filepath.Join(root, "vendor/node_modules/x/x.js"), "v1")
	mkfile(t, filepath.Join(root, "node_modules/y/y.js"), "untracked")
	runGit(t, root, "add", "dist/lib.js", "vendor/node_modules/x/x.js")
	runGit(t, root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "tracked in left-out directories")
	w := watchDir(t, h, root, Options{LeaveOut: []string{"dist", "node_modules"}})
	// root, dist, vendor, vendor/node_modules, vendor/node_modules/x;
	// never node_modules.
	if got := w.Stats().Dirs; got != 5 {
		t.Errorf("Dirs = %d, want 5", got)
	}
	mkfile(t, filepath.Join(root, "dist/lib.js"), "v2")
	mkfile(t, filepath.Join(root, "vendor/node_modules/x/x.js"), "v2")
	mkfile(t, filepath.Join(root, "dist/bundle.js"), "untracked")
	mkfile(t, filepath.Join(root, "vendor/node_modules/x/new.js"), "untracked")
	mkfile(t, filepath.Join(root, "node_modules/y/y.js"), "untracked, again")
	mkdirs(t, root, "dist/chunks")
	mkfile(t, filepath.Join(root, "zz-marker"), "")
	st := waitChanged(t, w, "zz-marker")
	if want := []string{"dist/lib.js", "vendor/node_modules/x/x.js", "zz-marker"}; !slices.Equal(st.FilesChanged, want) {
		t.Errorf("FilesChanged = %q, want %q", st.FilesChanged, want)
	}
	if got := w.Stats().Dirs; got != 5 {
		t.Errorf("Dirs after an untracked directory in dist = %d, want 5", got)
	}
}
