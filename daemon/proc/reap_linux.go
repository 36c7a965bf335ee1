package proc

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// reapExited reaps the children that have exited, one wait a child: it
// asks the kernel which child has (waitid with WNOWAIT, which leaves it a
// zombie) and reaps it if it is a session's or an orphan's. clean says no
// exited child is left; false means one is a helper's, which os/exec
// reaps, and the caller looks at each session child instead.
func reapExited() (exited []*Child, clean bool) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil { // ECHILD: no child at all
			return exited, true
		}
		pid := int(siginfoPid(&info))
		if pid == 0 {
			return exited, true // none has exited
		}
		if isHelper(pid) {
			return exited, false
		}
		var ws unix.WaitStatus
		reapWaits.Add(1)
		// Reaped and forgotten at once, under the lock a signal takes.
		children.mu.Lock()
		if wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); wpid != pid || err != nil {
			children.mu.Unlock()
			return exited, false
		}
		c := children.m[pid]
		delete(children.m, pid)
		children.mu.Unlock()
		if c != nil { // else an orphan that came back to the daemon
			c.exit = exitOf(ws)
			exited = append(exited, c)
		}
	}
}

// siginfoPid is a child's siginfo's si_pid, which x/sys/unix does not
// name: the first field of the union after three ints, aligned as a
// pointer is.
func siginfoPid(info *unix.Siginfo) int32 {
	off := (3*4 + unsafe.Alignof(uintptr(0)) - 1) &^ (unsafe.Alignof(uintptr(0)) - 1)
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), off))
}
