package proc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Adopt watches a live process that an earlier daemon started (not a child
// of this one) through a pidfd: Done is closed when it exits. Its exit
// status cannot be known, so Exit reports Code -1 and no signal.
func Adopt(p Process) (*Child, error) {
	pid := p.PID
	if err := refuse(pid); err != nil {
		return nil, err
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("watch pid %d: %w", pid, err)
	}
	// The pidfd names one process: check it is the one recorded.
	if !Alive(pid, p.Start) || p.checkIno(fd) != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pid %d is no longer the recorded process", pid)
	}
	c := &Child{PID: pid, StartTime: p.Start, Ino: p.Ino, done: make(chan struct{}), exit: Exit{Code: -1}}
	go func() {
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == nil || !errors.Is(err, unix.EINTR) {
				break
			}
		}
		// A former child of ours that came back through the subreaper is
		// reaped by the reaper; anything else by its own parent.
		c.finish()
	}()
	return c, nil
}
