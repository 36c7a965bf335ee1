package sessions

import (
	"os"
	"path/filepath"
	"reflect"
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

// TestEachRecordsWrite: which write each record of a session's life gets.
// What each write syncs, and when, is tested in package state.
func TestEachRecordsWrite(t *testing.T) {
	for _, tc := range []struct {
		state string
		seq   uint64
		want  func(string, any) error
		name  string
	}{
		{ipc.StateStarting, 1, state.WriteRecordDeferred, "deferred: synced beside the start"},
		{ipc.StateRunning, 2, state.WriteRecordLazily, "lazily: one sync for the starts about then"},
		{ipc.StateRunning, 3, state.WriteRecordDeferred, "deferred: a report, the agent's state"},
		{ipc.StateWarned, 4, state.WriteRecordDeferred, "deferred: the warning"},
		{ipc.StateStarting, 2, state.WriteJSONReusingUnsynced, "content only: a queued session's start"},
		{ipc.StateQueued, 1, state.WriteRecord, "synced"},
		{ipc.StateStopping, 5, state.WriteRecord, "synced"},
		{ipc.StateEnded, 6, state.WriteRecord, "synced"},
		{ipc.StateFailed, 2, state.WriteRecord, "synced"},
	} {
		got := recordWrite(&ipc.Session{State: tc.state, Seq: tc.seq})
		if reflect.ValueOf(got).Pointer() != reflect.ValueOf(tc.want).Pointer() {
			t.Errorf("a %s record (seq %d) is not written %s", tc.state, tc.seq, tc.name)
		}
	}
}
