package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// EnableSubreaper is a no-op on macOS, which has no subreapers.
func EnableSubreaper() error { return nil }

// StartTime returns the process's start time, in microseconds since the
// epoch.
func StartTime(pid int) (uint64, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	if kp.Proc.P_pid != int32(pid) {
		return 0, unix.ESRCH
	}
	t := kp.Proc.P_starttime
	return uint64(t.Sec)*1e6 + uint64(t.Usec), nil
}

// Alive reports whether pid is a live process that started at startTime.
func Alive(pid int, startTime uint64) bool {
	start, err := StartTime(pid)
	return err == nil && startTime != 0 && start == startTime
}

// BootID identifies the running boot.
func BootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return id
}

func reapOrphans() {}

// SessionProcs returns nothing beyond the process group on macOS: the group
// is signalled directly.
func SessionProcs(sessionID string, leader *Child, spawned bool) []Process { return nil }

// Catches cannot tell on macOS.
func Catches(pid int, sig unix.Signal) (bool, error) {
	return false, errors.New("signal dispositions are not visible on this platform")
}

// CatchesSupported reports whether Catches can tell on this platform.
const CatchesSupported = false

// SessionsByEnv cannot read other processes' environments on macOS.
func SessionsByEnv(socket string) []Found { return nil }

// KillHelpers has nothing to do where there are no cgroups: the session's
// sweep finds its helpers.
func KillHelpers(sessionID string) int { return 0 }

// reapExited leaves every child to reap's look at each: there is no
// waitid on macOS to ask which has exited.
func reapExited() (exited []*Child, clean bool) { return nil, false }
