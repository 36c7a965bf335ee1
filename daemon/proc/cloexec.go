package proc

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseOnExec marks every descriptor above stderr close-on-exec: one the
// daemon inherited open (from a shell, a service manager, a test) would
// otherwise reach every process it starts. Go opens its own descriptors
// close-on-exec already; a session then starts with stdin, stdout, stderr
// and what sessiond gives it, nothing else.
func CloseOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		// No /proc (macOS): every descriptor up to a bound.
		for fd := 3; fd < 1024; fd++ {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, fl|unix.FD_CLOEXEC)
		}
	}
}
