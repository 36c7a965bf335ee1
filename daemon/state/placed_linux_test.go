package state

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPlacedTakesAFreeNameOrExchanges: a spare takes a free name (and is
// gone), and is exchanged with a name that is there after all (and holds
// what it held), as exchanged does either way.
func TestPlacedTakesAFreeNameOrExchanges(t *testing.T) {
	dir := t.TempDir()
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	write(".free.spare", "new")
	if swapped, err := placed(dfd, ".free.spare", "free"); err != nil || swapped {
		t.Errorf("a free name: swapped %v, %v; want a rename", swapped, err)
	}
	if got := read("free"); got != "new" {
		t.Errorf("the free name holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".free.spare")); !os.IsNotExist(err) {
		t.Errorf("the spare is still there: %v", err)
	}
	write(".taken.spare", "new")
	write("taken", "old")
	if swapped, err := placed(dfd, ".taken.spare", "taken"); err != nil || !swapped {
		t.Errorf("a taken name: swapped %v, %v; want an exchange", swapped, err)
	}
	if got, spare := read("taken"), read(".taken.spare"); got != "new" || spare != "old" {
		t.Errorf("the name holds %q and the spare %q, want new and old", got, spare)
	}
}

// TestAProjectsFirstEndRenamesInVainNever: the first end of a project takes
// the names of its handoff and session state from the spares made ahead
// for it (PrepareEnd) without first trying an exchange, which fails there;
// a later end exchanges at once, its old files becoming the spares. No
// rename of either end fails.
func TestAProjectsFirstEndRenamesInVainNever(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenProject(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		from, to string
		flags    uint
		err      error
	}
	var calls []call
	renameat2 = func(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
		err := unix.Renameat2(olddirfd, oldpath, newdirfd, newpath, flags)
		calls = append(calls, call{oldpath, newpath, flags, err})
		return err
	}
	t.Cleanup(func() { renameat2 = unix.Renameat2 })
	end := func(id string) {
		t.Helper()
		if err := p.PrepareEnd(""); err != nil {
			t.Fatal(err)
		}
		if err := p.WriteLock(&Lock{SessionID: id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		calls = nil
		res := p.WriteAccount(func(q *Project, prev *SessionState, err error) AccountWrite {
			return AccountWrite{Handoff: &Handoff{SessionID: id}, State: &SessionState{CurrentPlan: "after " + id},
				Progress: ProgressEntry{Time: time.Now(), SessionID: id}, Release: id}
		})
		if res.Handoff != nil || res.State != nil || res.Progress != nil || res.Release != nil {
			t.Fatalf("end %s: %+v", id, res)
		}
		for _, c := range calls {
			if c.err != nil && c.to != WarningFile && c.from != WarningFile {
				t.Errorf("end %s: renameat2(%s, %s, %#x) failed: %v", id, c.from, c.to, c.flags, c.err)
			}
		}
	}
	end("a")
	h, err := p.LoadHandoff()
	if err != nil || h.SessionID != "a" {
		t.Fatalf("the first end's handoff: %+v, %v", h, err)
	}
	st, err := p.LoadSessionState()
	if err != nil || st == nil || st.CurrentPlan != "after a" {
		t.Fatalf("the first end's state: %+v, %v", st, err)
	}
	end("b")
	h, err = p.LoadHandoff()
	if err != nil || h.SessionID != "b" {
		t.Fatalf("the second end's handoff: %+v, %v", h, err)
	}
	sd := filepath.Join(dir, DirName)
	if b, err := os.ReadFile(filepath.Join(sd, SpareName(HandoffFile))); err != nil || len(b) == 0 {
		t.Errorf("the first end's handoff should be the spare after the second: %q, %v", b, err)
	}
}

// TestAnArchivedHandoffTakesItsNameAtOnce: a session's handoff, written at
// its end into the spare its directory was made with, takes its name
// without an exchange that fails; a record whose spare is empty while the
// record is there (a queued session's first) is exchanged all the same.
func TestAnArchivedHandoffTakesItsNameAtOnce(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{SpareName(HandoffFile), "session.json", SpareName("session.json")} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var failed []string
	renameat2 = func(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
		err := unix.Renameat2(olddirfd, oldpath, newdirfd, newpath, flags)
		if err != nil {
			failed = append(failed, oldpath+" → "+newpath+": "+err.Error())
		}
		return err
	}
	t.Cleanup(func() { renameat2 = unix.Renameat2 })
	if err := SaveHandoff(filepath.Join(dir, HandoffFile), &Handoff{SessionID: "a"}); err != nil {
		t.Fatal(err)
	}
	if len(failed) != 0 {
		t.Errorf("the handoff's renames failed: %q", failed)
	}
	if h, err := LoadHandoff(filepath.Join(dir, HandoffFile)); err != nil || h.SessionID != "a" {
		t.Errorf("the handoff: %+v, %v", h, err)
	}
	if err := WriteJSONReusingUnsynced(filepath.Join(dir, "session.json"), map[string]string{"id": "q"}); err != nil {
		t.Fatal(err)
	}
	var rec map[string]string
	if err := ReadRecord(filepath.Join(dir, "session.json"), &rec); err != nil || rec["id"] != "q" {
		t.Errorf("the record: %v, %v", rec, err)
	}
}
