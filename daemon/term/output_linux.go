package term

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// readSize is a read of the master: a terminal hands over at most its
	// line buffer (4 KiB) at a time.
	readSize = 8 << 10
	// flowWaitMs is how long the reader waits in poll(2) itself for more
	// output once output flows, before it leaves the wait to the runtime's
	// poller: a terminal's writer waits for every read, and a read woken
	// through the poller and the scheduler costs the holder more.
	flowWaitMs = 5
	// pauseMs is how long the terminal must have been empty for the
	// reader to take output as paused and write the log.
	pauseMs = 1
)

// readOutput reads the master and hands each read to take, until the
// terminal is closed or the holder is done. The master is non-blocking
// (see pollable): the reader reads until the terminal is empty, waits for
// more in poll(2) while output flows, writes the log once the terminal has
// stayed empty for pauseMs, and leaves the wait to the runtime's poller
// once it has for flowWaitMs more.
func (h *holder) readOutput() {
	rc, err := h.master.SyscallConn()
	if err != nil {
		h.diag.Printf("terminal output: %v", err)
		return
	}
	buf := make([]byte, readSize)
	_ = rc.Read(func(fd uintptr) bool {
		flowing := false
		for {
			n, errno := readNonblock(int(fd), buf)
			switch {
			case n > 0:
				if !h.take(buf[:n]) {
					return true
				}
				flowing = true
			case errno == unix.EINTR:
			case errno == unix.EAGAIN:
				if flowing && waitReadable(int(fd), pauseMs) {
					continue
				}
				h.caughtUp()
				if !flowing || !waitReadable(int(fd), flowWaitMs) {
					return false // wait in the poller
				}
			default:
				return true // closed, or an error: nothing more to read
			}
		}
	})
}

// readNonblock reads a non-blocking fd without telling the scheduler. Such
// a read does not wait for input, but a terminal's can wait a few µs for
// the line discipline's work; through the runtime's system call entry, a
// read that long has its P handed off, and getting it back costs the holder
// more than the read itself.
func readNonblock(fd int, p []byte) (int, unix.Errno) {
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}

// waitReadable waits up to ms milliseconds in poll(2) for fd to be readable.
func waitReadable(fd, ms int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, ms)
		if err == unix.EINTR {
			continue
		}
		return n > 0
	}
}
