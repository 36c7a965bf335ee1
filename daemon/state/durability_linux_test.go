package state

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// countSyncs counts the syncs of one writer alone (fsyncFD: a lone
// writer's group is a file's own fsync).
func countSyncs(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	fsyncFD = func(fd int) error { n.Add(1); return unix.Fsync(fd) }
	syncFS = func(fd int) error { n.Add(1); return unix.Syncfs(fd) }
	t.Cleanup(func() { fsyncFD, syncFS = unix.Fsync, unix.Syncfs })
	return &n
}

// TestWhatEachWriteSyncs: a durable write syncs its content and its name;
// a session's first record its content, after it returns; a later
// starting record (a queued session's) its content only; context.md
// nothing; the lock its content; a directory EnsureDir makes, its parent,
// and one that is there, nothing. Each one lands whole all the same.
func TestWhatEachWriteSyncs(t *testing.T) {
	dir := t.TempDir()
	n := countSyncs(t)
	step := func(what string, want int64, fn func() error) {
		t.Helper()
		n.Store(0)
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := n.Load(); got != want {
			t.Errorf("%s made %d syncs, want %d", what, got, want)
		}
	}
	sessions := filepath.Join(dir, "sessions")
	if err := os.Mkdir(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	sdir := filepath.Join(sessions, "s1")
	rec := filepath.Join(sdir, "session.json")
	step("EnsureDir of a new directory", 1, func() error { return EnsureDir(sdir) })
	step("EnsureDir of one that is there", 0, func() error { return EnsureDir(sdir) })
	// A new session's directory has its record and its spare, empty
	// (SpareDirs); its first record and the running one defer their syncs.
	for _, name := range []string{"session.json", SpareName("session.json")} {
		if err := os.WriteFile(filepath.Join(sdir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	step("the first, starting record, its sync deferred, then waited for", 1, func() error {
		if err := WriteRecordDeferred(rec, map[string]string{"state": "starting"}); err != nil {
			return err
		}
		return WaitSynced(rec)
	})
	step("a starting record after a queued one", 1, func() error { return WriteJSONReusingUnsynced(rec, map[string]string{"state": "starting"}) })
	step("the running record", 2, func() error { return WriteJSONReusing(rec, map[string]string{"state": "running"}) })
	step("a later record", 2, func() error { return WriteJSONReusing(rec, map[string]string{"state": "ended"}) })
	var got map[string]string
	if err := ReadJSON(rec, &got); err != nil || got["state"] != "ended" {
		t.Errorf("the record reads %v, %v", got, err)
	}

	project := filepath.Join(dir, "project")
	if err := os.Mkdir(project, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := OpenProject(project, nil)
	if err != nil {
		t.Fatal(err)
	}
	step("context.md", 0, func() error { return p.WriteContext(ContextInput{SessionID: "s1", Now: testNow}) })
	if b, err := os.ReadFile(filepath.Join(project, DirName, ContextFile)); err != nil || len(b) == 0 {
		t.Errorf("context.md: %d bytes, %v", len(b), err)
	}
	step("the handoff", 2, func() error { return p.SaveHandoff(&Handoff{SessionID: "s1"}) })
	step("the first lock", 1, func() error { return p.WriteLock(&Lock{SessionID: "s1"}) })
	step("a later lock", 1, func() error { return p.WriteLock(&Lock{SessionID: "s2"}) })
	if l, err := p.ReadLock(); err != nil || l.SessionID != "s2" {
		t.Errorf("the lock reads %v, %v", l, err)
	}
}
