package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"
)

// TestLockAndWarningKeepTheirInodes: a lock and a warning come and go with
// every session, and none of it makes or frees inodes past the first: the
// removed file waits as the spare that the next write writes into. Readers
// see it gone all the same.
func TestLockAndWarningKeepTheirInodes(t *testing.T) {
	project := t.TempDir()
	p, err := OpenProject(project, nil)
	if err != nil {
		t.Fatal(err)
	}
	inode := func(name string) uint64 {
		t.Helper()
		fi, err := os.Stat(filepath.Join(project, DirName, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	locks, warnings := map[uint64]bool{}, map[uint64]bool{}
	for i := range 5 {
		id := fmt.Sprintf("s%d", i)
		if err := p.WriteLock(&Lock{SessionID: id, CreatedAt: testNow}); err != nil {
			t.Fatal(err)
		}
		locks[inode(LockFile)] = true
		if err := p.WriteWarning(&Warning{SessionID: id, WarnedAt: testNow, Deadline: testNow.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		warnings[inode(WarningFile)] = true
		if l, err := p.ReadLock(); err != nil || l.SessionID != id {
			t.Fatalf("session %d: lock %+v, %v", i, l, err)
		}
		if err := p.RemoveWarning(); err != nil {
			t.Fatal(err)
		}
		if err := p.RemoveLock(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ReadLock(); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("session %d: after RemoveLock ReadLock gives %v, want fs.ErrNotExist", i, err)
		}
		if _, err := p.ReadWarning(); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("session %d: after RemoveWarning ReadWarning gives %v, want fs.ErrNotExist", i, err)
		}
		if err := p.RemoveLock(); err != nil {
			t.Errorf("session %d: a second RemoveLock: %v", i, err)
		}
	}
	if len(locks) != 1 || len(warnings) != 1 {
		t.Errorf("5 sessions used %d lock inodes and %d warning inodes, want 1 each", len(locks), len(warnings))
	}
	ents, _ := os.ReadDir(filepath.Join(project, DirName))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"." + LockFile + spareMark, "." + WarningFile + spareMark}; !reflect.DeepEqual(names, want) {
		t.Errorf(".sessiond holds %q, want only the spares %q", names, want)
	}
}

// TestProjectFilesTradeTwoInodes: the handoff, the session state and
// context.md, rewritten at every end and start, each trade two inodes with
// their spares, and every rewrite reads back whole; clearing the state
// takes its spare (the state before) too.
func TestProjectFilesTradeTwoInodes(t *testing.T) {
	project := t.TempDir()
	p, err := OpenProject(project, nil)
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]map[uint64]bool{}
	note := func(name string) {
		t.Helper()
		fi, err := os.Stat(filepath.Join(project, DirName, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if inodes[name] == nil {
			inodes[name] = map[uint64]bool{}
		}
		inodes[name][fi.Sys().(*syscall.Stat_t).Ino] = true
	}
	for i := range 6 {
		id := fmt.Sprintf("s%d", i)
		if err := p.WriteContext(ContextInput{SessionID: id, Now: testNow}); err != nil {
			t.Fatal(err)
		}
		note(ContextFile)
		if err := p.SaveHandoff(&Handoff{SessionID: id}); err != nil {
			t.Fatal(err)
		}
		note(HandoffFile)
		if err := p.SaveSessionState(&SessionState{CurrentPlan: id}); err != nil {
			t.Fatal(err)
		}
		note(SessionStateFile)
		if h, err := p.LoadHandoff(); err != nil || h.SessionID != id {
			t.Fatalf("session %d: handoff %+v, %v", i, h, err)
		}
		if st, err := p.LoadSessionState(); err != nil || st.CurrentPlan != id {
			t.Fatalf("session %d: state %+v, %v", i, st, err)
		}
	}
	for name, seen := range inodes {
		if len(seen) > 2 {
			t.Errorf("6 writes of %s used %d inodes, want the file and its spare trading two", name, len(seen))
		}
	}
	if err := p.ClearSessionState(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{SessionStateFile, "." + SessionStateFile + spareMark} {
		if _, err := os.Lstat(filepath.Join(project, DirName, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after ClearSessionState %s: %v, want it gone", name, err)
		}
	}
}
