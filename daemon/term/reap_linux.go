package term

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitProcess waits for p to end and reaps it without holding an OS thread
// in wait for all that time: p's pidfd becomes readable when it exits, and
// the runtime's poller watches that. Where pidfds are missing it falls back
// to Process.Wait.
func waitProcess(p *os.Process) (syscall.WaitStatus, error) {
	fd, err := unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return waitBlocking(p)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return waitBlocking(p)
	}
	var ws unix.WaitStatus
	var werr error
	err = rc.Read(func(uintptr) bool {
		wpid, err := unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
		switch {
		case err == unix.EINTR:
			return false
		case err != nil:
			werr = err
			return true
		}
		return wpid == p.Pid
	})
	// p is not released: Release rewrites p.Pid, which others read, and
	// p's own handle goes with p.
	if err == nil {
		err = werr
	}
	if err != nil {
		return 0, fmt.Errorf("wait for pid %d: %w", p.Pid, err)
	}
	return syscall.WaitStatus(ws), nil
}

// reapLater collects a holder's exit status when it ends, so that no zombie
// is left behind. A daemon that reaps orphans itself may get there first,
// which is fine.
func reapLater(p *os.Process) {
	go func() { _, _ = waitProcess(p) }()
}
