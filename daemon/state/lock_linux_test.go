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
