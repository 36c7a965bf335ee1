package term

import (
	"os"

	"golang.org/x/sys/unix"
)

// reapLater collects the holder's exit status when it ends, so that no
// zombie is left behind, without an OS thread blocked in wait for each
// holder: its pidfd becomes readable when it exits, and the runtime's poller
// watches that. A daemon that reaps orphans itself may get there first,
// which is fine.
func reapLater(p *os.Process) {
	pid := p.Pid
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		go func() { _, _ = p.Wait() }()
		return
	}
	_ = p.Release()
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	go func() {
		defer f.Close()
		_ = rc.Read(func(uintptr) bool {
			var ws unix.WaitStatus
			wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				return false
			}
			return wpid == pid || err != nil
		})
	}()
}
