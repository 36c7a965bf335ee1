package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func changesT(t *testing.T, w *Watch, since Mark) Changes {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := w.Changes(ctx, since)
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	return ch
}

// Every kind of change is in the record, with no wait: a long coalescing
// delay shows that Changes does not wait for it, and the barrier that a
// change made just before the call is in.
func TestChangesRecordsEveryKind(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkfile(t, filepath.Join(root, "keep.txt"), "k")
	mkfile(t, filepath.Join(root, "mod.txt"), "m")
	mkfile(t, filepath.Join(root, "gone.txt"), "g")
	mkfile(t, filepath.Join(root, "old-name.txt"), "r")
	mkfile(t, filepath.Join(root, "run.sh"), "#!/bin/sh\n")
	mkfile(t, filepath.Join(root, "olddir/a/x.txt"), "x")
	mkfile(t, filepath.Join(root, "flip"), "a file")
	mkfile(t, filepath.Join(root, "flop/inner.txt"), "a dir")
	w := watchDir(t, h, root, Options{Coalesce: time.Hour})
	start := changesT(t, w, Mark{})
	if !start.Complete || len(start.Paths) != 0 {
		t.Fatalf("Changes at the start = %+v, want complete and empty", start)
	}

	mkfile(t, filepath.Join(root, "mod.txt"), "m2")
	mkfile(t, filepath.Join(root, "new/deep/n.txt"), "n")
	must(t, os.Remove(filepath.Join(root, "gone.txt")))
	must(t, os.Rename(filepath.Join(root, "old-name.txt"), filepath.Join(root, "new-name.txt")))
	must(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	must(t, os.RemoveAll(filepath.Join(root, "olddir")))
	must(t, os.Remove(filepath.Join(root, "flip")))
	mkfile(t, filepath.Join(root, "flip/now-inside.txt"), "")
	must(t, os.RemoveAll(filepath.Join(root, "flop")))
	mkfile(t, filepath.Join(root, "flop"), "now a file")
	must(t, os.Symlink("keep.txt", filepath.Join(root, "link")))

	ch := changesT(t, w, start.Mark)
	if !ch.Complete {
		t.Fatalf("Changes incomplete: %s", ch.Incomplete)
	}
	for _, want := range []string{
		"mod.txt", "new", "new/deep/n.txt", "gone.txt", "old-name.txt", "new-name.txt",
		"run.sh", "olddir", "flip", "flip/now-inside.txt", "flop", "link",
	} {
		if !slices.Contains(ch.Paths, want) {
			t.Errorf("Changes lacks %s: %q", want, ch.Paths)
		}
	}
	if slices.Contains(ch.Paths, "keep.txt") {
		t.Errorf("an untouched file is in Changes: %q", ch.Paths)
	}
	if !slices.IsSorted(ch.Paths) {
		t.Errorf("Paths not sorted: %q", ch.Paths)
	}
	// A mode change is not an edit.
	if slices.Contains(w.Stats().FilesChanged, "run.sh") {
		t.Errorf("a chmod counted as an edit: %q", w.Stats().FilesChanged)
	}

	// Since the new mark: nothing, then only what came after it.
	if again := changesT(t, w, ch.Mark); !again.Complete || len(again.Paths) != 0 {
		t.Errorf("Changes since the last mark = %+v, want complete and empty", again)
	}
	mkfile(t, filepath.Join(root, "later.txt"), "")
	if got := changesT(t, w, ch.Mark); !slices.Equal(got.Paths, []string{"later.txt"}) {
		t.Errorf("Changes after one more write = %q, want [later.txt]", got.Paths)
	}
}

// A consumer whose action failed reads again since its old mark and gets
// everything; a read since an older mark than one already read is
// incomplete, and so is a mark of another watch.
func TestChangesMarks(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	w := watchDir(t, h, root, Options{})
	other := watchDir(t, h, t.TempDir(), Options{})
	m0 := changesT(t, w, Mark{}).Mark
	mkfile(t, filepath.Join(root, "a"), "")
	first := changesT(t, w, m0)
	mkfile(t, filepath.Join(root, "b"), "")
	retry := changesT(t, w, m0)
	if !retry.Complete || !slices.Equal(retry.Paths, []string{"a", "b"}) {
		t.Errorf("reread since the old mark = %+v, want a and b", retry)
	}
	next := changesT(t, w, retry.Mark)
	if !next.Complete || len(next.Paths) != 0 {
		t.Errorf("read since the newest mark = %+v", next)
	}
	if stale := changesT(t, w, first.Mark); stale.Complete {
		t.Errorf("a read since a mark older than one already read is complete: %+v", stale)
	}
	if foreign := changesT(t, w, changesT(t, other, Mark{}).Mark); foreign.Complete {
		t.Errorf("a mark of another watch gave a complete record: %+v", foreign)
	}
	must(t, w.Close())
	if closed := changesT(t, w, next.Mark); closed.Complete || !strings.Contains(closed.Incomplete, "closed") {
		t.Errorf("Changes of a closed watch = %+v, want incomplete", closed)
	}
}

// Lost events (the rescan an inotify overflow causes) make the record since
// every earlier mark incomplete; the mark read then starts afresh.
func TestChangesIncompleteAfterLostEvents(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	w := watchDir(t, h, root, Options{})
	m := changesT(t, w, Mark{}).Mark
	mkfile(t, filepath.Join(root, "a"), "")
	w.requestRescan()
	ch := changesT(t, w, m)
	if ch.Complete || !strings.Contains(ch.Incomplete, "overflow") {
		t.Fatalf("Changes after lost events = %+v, want incomplete (overflow)", ch)
	}
	mkfile(t, filepath.Join(root, "b"), "")
	after := changesT(t, w, ch.Mark)
	if !after.Complete || !slices.Equal(after.Paths, []string{"b"}) {
		t.Errorf("Changes since the mark after the rescan = %+v, want complete [b]", after)
	}
}

func TestChangesBounded(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	w := watchDir(t, h, root, Options{MaxRecord: 5})
	m := changesT(t, w, Mark{}).Mark
	for i := range 8 {
		mkfile(t, filepath.Join(root, fmt.Sprintf("f%d", i)), "")
	}
	ch := changesT(t, w, m)
	if ch.Complete || !strings.Contains(ch.Incomplete, "more than 5") {
		t.Errorf("Changes past the bound = %+v, want incomplete", ch)
	}
	if len(ch.Paths) > 5 {
		t.Errorf("%d paths kept, bound 5", len(ch.Paths))
	}
}

// Directories past an inotify limit are rescanned, late: the record is
// incomplete while any is.
func TestChangesIncompleteWhenDegraded(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkdirs(t, root, "deg/x")
	lim := &limitAdd{real: h.addWatch, prefix: filepath.Join(root, "deg"), errno: syscall.ENOSPC}
	h.addWatch = lim.add
	w := watchDir(t, h, root, Options{Rescan: 50 * time.Millisecond})
	if ch := changesT(t, w, Mark{}); ch.Complete || !strings.Contains(ch.Incomplete, "rescanned periodically") {
		t.Errorf("Changes while degraded = %+v, want incomplete", ch)
	}
	lim.lifted.Store(true)
	waitFor(t, "no longer degraded", func() bool { return !w.Stats().Degraded })
	m := changesT(t, w, Mark{}).Mark
	mkfile(t, filepath.Join(root, "deg/x/f"), "")
	if ch := changesT(t, w, m); !ch.Complete || !slices.Equal(ch.Paths, []string{"deg/x/f"}) {
		t.Errorf("Changes once watched again = %+v, want complete [deg/x/f]", ch)
	}
}

// Left-out directories (node_modules and the like) are neither watched nor
// reported, even when no ignore rule names them; a file with such a name
// is an ordinary file.
func TestLeaveOut(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	gitInit(t, root)
	mkdirs(t, root, "node_modules/pkg", "web/node_modules/react", "src")
	w := watchDir(t, h, root, Options{LeaveOut: []string{"node_modules", ".venv"}})
	if got := w.Stats().Dirs; got != 3 { // root, web, src
		t.Errorf("Dirs = %d, want 3", got)
	}
	m := changesT(t, w, Mark{}).Mark
	mkfile(t, filepath.Join(root, "node_modules/pkg/junk.js"), "x")
	mkfile(t, filepath.Join(root, "web/node_modules/react/index.js"), "x")
	mkfile(t, filepath.Join(root, "py/.venv/bin/python"), "x")
	mkfile(t, filepath.Join(root, "src/.venv"), "a file named like a left-out directory")
	mkfile(t, filepath.Join(root, "src/app.js"), "real work")
	ch := changesT(t, w, m)
	st := w.Stats()
	if want := []string{"src/.venv", "src/app.js"}; !slices.Equal(st.FilesChanged, want) {
		t.Errorf("FilesChanged = %q, want %q", st.FilesChanged, want)
	}
	if st.LastFileEdited == "" || strings.Contains(st.LastFileEdited, "node_modules") {
		t.Errorf("LastFileEdited = %q", st.LastFileEdited)
	}
	for _, p := range ch.Paths {
		if strings.Contains(p, "node_modules") || strings.Contains(p, ".venv/") {
			t.Errorf("Changes has left-out %s: %q", p, ch.Paths)
		}
	}
	if !slices.Contains(ch.Paths, "py") || !slices.Contains(ch.Paths, "src/app.js") {
		t.Errorf("Changes = %q, want py and src/app.js", ch.Paths)
	}
}

// info/exclude lives in .git, which is never watched: a change to it is
// noticed at the next batch, the tree is read again with the new rules, and
// the record says earlier marks are incomplete.
func TestInfoExcludeChange(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	gitInit(t, root)
	exclude := filepath.Join(root, ".git", "info", "exclude")
	mkfile(t, exclude, "gen/\n")
	mkdirs(t, root, "gen/a", "src")
	w := watchDir(t, h, root, Options{})
	if got := w.Stats().Dirs; got != 2 {
		t.Fatalf("Dirs = %d, want 2 (gen excluded)", got)
	}
	m := changesT(t, w, Mark{}).Mark
	must(t, os.WriteFile(exclude, nil, 0o644))
	mkfile(t, filepath.Join(root, "src/f"), "")
	ch := changesT(t, w, m)
	if ch.Complete || !strings.Contains(ch.Incomplete, "info/exclude") {
		t.Errorf("Changes after info/exclude changed = %+v, want incomplete", ch)
	}
	if got := w.Stats().Dirs; got != 4 {
		t.Errorf("Dirs = %d after gen was unexcluded, want 4", got)
	}
	mkfile(t, filepath.Join(root, "gen/a/y"), "")
	if got := changesT(t, w, ch.Mark); !got.Complete || !slices.Equal(got.Paths, []string{"gen/a/y"}) {
		t.Errorf("Changes in the unexcluded dir = %+v", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A watched directory moved away and another made under its name before
// the batch is handled: the watches were on the one that went, and the new
// one is watched from then on.
func TestDirectoryReplacedInOneBatch(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkdirs(t, root, "d/sub")
	w := watchDir(t, h, root, Options{Coalesce: time.Hour})
	m := changesT(t, w, Mark{}).Mark
	must(t, os.Rename(filepath.Join(root, "d"), filepath.Join(root, "moved")))
	mkfile(t, filepath.Join(root, "d/new.txt"), "")
	ch := changesT(t, w, m)
	for _, want := range []string{"d", "d/new.txt", "moved"} {
		if !slices.Contains(ch.Paths, want) {
			t.Errorf("Changes lacks %s: %q", want, ch.Paths)
		}
	}
	mkfile(t, filepath.Join(root, "d/later.txt"), "")
	mkfile(t, filepath.Join(root, "moved/sub/in-moved.txt"), "")
	got := changesT(t, w, ch.Mark)
	if want := []string{"d/later.txt", "moved/sub/in-moved.txt"}; !slices.Equal(got.Paths, want) {
		t.Errorf("Changes after = %q, want %q", got.Paths, want)
	}
}

// A rescan (after lost events) that meets a moved directory under its new
// name before it forgets the old one keeps it watched: inotify gives the
// moved inode the same watch under both names.
func TestMovedDirectoryAcrossRescan(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	mkdirs(t, root, "a/deep")
	w := watchDir(t, h, root, Options{Coalesce: time.Hour})
	must(t, os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")))
	w.requestRescan()
	ch := changesT(t, w, Mark{})
	mkfile(t, filepath.Join(root, "b/deep/f"), "")
	if got := changesT(t, w, ch.Mark); !slices.Equal(got.Paths, []string{"b/deep/f"}) {
		t.Errorf("Changes in the moved directory = %q, want [b/deep/f]", got.Paths)
	}
	if got := w.Stats().Dirs; got != 3 {
		t.Errorf("Dirs = %d, want 3", got)
	}
}

// Ignore rules do not apply to tracked files: a tracked file that a
// pattern matches is reported, also one tracked after the watch started.
func TestTrackedIgnoredFiles(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	gitInit(t, root)
	mkfile(t, filepath.Join(root, ".gitignore"), "*.log\n")
	mkfile(t, filepath.Join(root, "tracked.log"), "")
	mkfile(t, filepath.Join(root, "later.log"), "")
	runGit(t, root, "add", "-f", "tracked.log")
	w := watchDir(t, h, root, Options{})
	m := changesT(t, w, Mark{}).Mark
	mkfile(t, filepath.Join(root, "tracked.log"), "changed")
	mkfile(t, filepath.Join(root, "untracked.log"), "ignored")
	ch := changesT(t, w, m)
	if !slices.Equal(ch.Paths, []string{"tracked.log"}) {
		t.Errorf("Changes = %q, want [tracked.log]", ch.Paths)
	}
	runGit(t, root, "add", "-f", "later.log")
	mkfile(t, filepath.Join(root, "later.log"), "changed")
	if got := changesT(t, w, ch.Mark); !slices.Equal(got.Paths, []string{"later.log"}) {
		t.Errorf("Changes after git add -f = %q, want [later.log]", got.Paths)
	}
}
