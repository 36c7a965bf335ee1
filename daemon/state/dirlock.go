package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// DirLockName is the file in a state dir whose lock its daemon holds.
const DirLockName = "sessiond.lock"

// ErrDirInUse is returned by LockDir when another daemon holds the dir.
var ErrDirInUse = errors.New("the state dir is in use by another sessiond")

// DirLock is a daemon's hold on its state dir. Two daemons on one state
// dir would adopt each other's sessions, take each other's log keeper and
// cgroups, and end each other's sessions when either stops; the lock lets
// only the first run. The kernel lets go of it when the daemon's process
// ends, however it ends.
type DirLock struct{ f *os.File }

// LockDir takes dir's lock for the daemon listening on socket, or says
// which daemon holds it (ErrDirInUse).
func LockDir(dir, socket string) (*DirLock, error) {
	path := filepath.Join(dir, DirLockName)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if err != unix.EWOULDBLOCK {
			return nil, &os.PathError{Op: "lock", Path: path, Err: err}
		}
		return nil, fmt.Errorf("%s: %w%s: one daemon a state dir; stop that one, or give this one a state dir of its own (--state-dir)",
			dir, ErrDirInUse, holder(f))
	}
	// Who holds it, for the next daemon's error: written under the lock,
	// read only by one that failed to take it.
	note := fmt.Sprintf("pid %d\nsocket %s\n", os.Getpid(), socket)
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(note), 0)
	}
	return &DirLock{f: f}, nil
}

// holder is " (pid N, socket S)" as the lock's holder wrote it, or "".
func holder(f *os.File) string {
	buf := make([]byte, 512)
	n, _ := f.ReadAt(buf, 0)
	var pid, socket string
	for _, line := range bytes.Split(buf[:n], []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("pid ")); ok {
			if _, err := strconv.Atoi(string(v)); err == nil {
				pid = string(v)
			}
		}
		if v, ok := bytes.CutPrefix(line, []byte("socket ")); ok {
			socket = EscapeText(string(v))
		}
	}
	switch {
	case pid != "" && socket != "":
		return fmt.Sprintf(" (pid %s, socket %s)", pid, socket)
	case pid != "":
		return fmt.Sprintf(" (pid %s)", pid)
	}
	return ""
}

// Release lets go of the lock (a daemon's process ending does the same).
func (l *DirLock) Release() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}
