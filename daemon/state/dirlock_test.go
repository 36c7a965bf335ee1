package state

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestLockDirOneDaemonADir(t *testing.T) {
	dir := t.TempDir()
	first, err := LockDir(dir, "/run/a.sock")
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockDir(dir, "/run/b.sock")
	if !errors.Is(err, ErrDirInUse) {
		t.Fatalf("second LockDir: err = %v, want ErrDirInUse", err)
	}
	for _, want := range []string{dir, "pid " + strconv.Itoa(os.Getpid()), "/run/a.sock", "--state-dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("second LockDir: %q does not name %q", err, want)
		}
	}
	if fi, err := os.Stat(dir + "/" + DirLockName); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the lock file: %v, %v; want mode 0600", fi, err)
	}
	first.Release()
	again, err := LockDir(dir, "/run/b.sock")
	if err != nil {
		t.Fatalf("LockDir after Release: %v", err)
	}
	again.Release()
}

func TestLockDirRefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	target := t.TempDir() + "/elsewhere"
	if err := os.Symlink(target, dir+"/"+DirLockName); err != nil {
		t.Fatal(err)
	}
	if l, err := LockDir(dir, "s"); err == nil {
		l.Release()
		t.Fatal("LockDir followed a symlink in the lock's place")
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the symlink's target was made: %v", err)
	}
}
