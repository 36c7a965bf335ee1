package sessions

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// TestANewSessionsRunningRecordFollowsItsFirstSynced: a new session's
// first record (starting) and the record of its running command are
// written with their syncs deferred, and the second's write, which the
// start's answer follows, returns only once the first is synced: the
// answered session is on disk. The second's sync follows, and the record
// reads back as the running one.
func TestANewSessionsRunningRecordFollowsItsFirstSynced(t *testing.T) {
	dir := t.TempDir()
	w := &RecordWriter{StateDir: dir}
	sdir := filepath.Join(dir, "sessions", "s1")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	// As a spare directory brings them: the record and its spare, empty.
	path := filepath.Join(sdir, "session.json")
	for _, name := range []string{"session.json", state.SpareName("session.json")} {
		if err := os.WriteFile(filepath.Join(sdir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := state.Syncs()
	if err := w.WriteRecord(&ipc.Session{ID: "s1", State: ipc.StateStarting, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRecord(&ipc.Session{ID: "s1", State: ipc.StateRunning, Seq: 2, PID: 42}); err != nil {
		t.Fatal(err)
	}
	if n := state.Syncs() - before; n < 1 {
		t.Fatalf("the running record's write returned after %d syncs, want the starting record's synced first", n)
	}
	if err := state.WaitSynced(path); err != nil {
		t.Fatal(err)
	}
	if n := state.Syncs() - before; n != 2 {
		t.Errorf("%d syncs for the two records, want 2 (one each, their exchanges not synced)", n)
	}
	var rec ipc.Session
	if err := state.ReadRecord(path, &rec); err != nil || rec.State != ipc.StateRunning || rec.PID != 42 {
		t.Errorf("the record reads %s pid %d (%v), want the running one", rec.State, rec.PID, err)
	}
	// A later record is written as ever: synced before it returns.
	before = state.Syncs()
	if err := w.WriteRecord(&ipc.Session{ID: "s1", State: ipc.StateStopping, Seq: 3}); err != nil {
		t.Fatal(err)
	}
	if n := state.Syncs() - before; n != 1 {
		t.Errorf("a later record made %d syncs before it returned, want 1", n)
	}
}
