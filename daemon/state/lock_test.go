package state

import (
	"errors"
	"io/fs"
	"os"
	"reflect"
	"testing"
	"time"
)

func TestLockRoundTrip(t *testing.T) {
	project := t.TempDir()
	if _, err := ReadLock(project); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("before: got %v, want an error wrapping fs.ErrNotExist", err)
	}
	want := &Lock{SessionID: "k3f9a2", DaemonPID: os.Getpid(), ChildPID: 4242, ChildStartTime: 123456789,
		BootID: "6f1a3c0e-2b1d-4c8e-9a7f-0d5e4b3a2c1f", CreatedAt: testNow}
	if err := CreateLock(project, want); err != nil {
		t.Fatal(err)
	}
	if got := mode(t, LockPath(project)); got != 0o600 {
		t.Errorf("mode: got %v, want %v", got, os.FileMode(0o600))
	}
	got, err := ReadLock(project)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	other := &Lock{SessionID: "zz", CreatedAt: testNow.Add(time.Minute)}
	if err := CreateLock(project, other); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second CreateLock: got %v, want an error wrapping fs.ErrExist", err)
	}
	if got, _ := ReadLock(project); got == nil || got.SessionID != "k3f9a2" {
		t.Errorf("after refused CreateLock: got %+v, want the first lock", got)
	}
	if err := WriteLock(project, other); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadLock(project); got == nil || got.SessionID != "zz" {
		t.Errorf("after WriteLock: got %+v, want the new lock", got)
	}
	if err := RemoveLock(project); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLock(project); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after remove: got %v, want an error wrapping fs.ErrNotExist", err)
	}
	if err := RemoveLock(project); err != nil {
		t.Errorf("removing twice: got %v, want nil", err)
	}
	if tmp := tempFiles(t, project+"/"+DirName); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

func TestReadLockCorrupt(t *testing.T) {
	project := t.TempDir()
	writeTestFile(t, LockPath(project), `{"session_id": "k3f9a2", "child_pid": `)
	if _, err := ReadLock(project); !errors.Is(err, ErrCorrupt) {
		t.Errorf("got %v, want an error matching ErrCorrupt", err)
	}
}

func TestWarningFile(t *testing.T) {
	project := t.TempDir()
	w := &Warning{SessionID: "k3f9a2", WarnedAt: testNow, Deadline: testNow.Add(30 * time.Minute), Message: "30 minutes left: commit and report"}
	if err := WriteWarning(project, w); err != nil {
		t.Fatal(err)
	}
	var got Warning
	if err := ReadJSON(WarningPath(project), &got); err != nil {
		t.Fatal(err)
	}
	if got.TimeLeftSeconds != 1800 {
		t.Errorf("time left: got %d, want 1800", got.TimeLeftSeconds)
	}
	if err := RemoveWarning(project); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(WarningPath(project)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after remove: got %v, want not exist", err)
	}
}
