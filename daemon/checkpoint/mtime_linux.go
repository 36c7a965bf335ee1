package checkpoint

import (
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setMtime sets the open file f's access and modification times to t, to
// the nanosecond, through the descriptor (utimensat with no path): never
// through a name that may have become a symlink meanwhile.
func setMtime(f *os.File, t time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
