package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// EnableSubreaper is a no-op on macOS, which has no subreapers.
func EnableSubreaper() error { return nil }

// StartTime is not tracked on macOS.
func StartTime(pid int) (uint64, error) { return 0, nil }

// Alive reports whether pid exists.
func Alive(pid int, startTime uint64) bool {
	return unix.Kill(pid, 0) == nil || errors.Is(unix.Kill(pid, 0), unix.EPERM)
}

// BootID is not tracked on macOS.
func BootID() string { return "" }

func reapOrphans() {}

// SessionProcs returns nothing beyond the process group on macOS: the group
// is signalled directly.
func SessionProcs(sessionID string, pgid int, spawned bool) []int { return nil }

// Catches cannot tell on macOS.
func Catches(pid int, sig unix.Signal) (bool, error) {
	return false, errors.New("signal dispositions are not visible on this platform")
}

// CatchesSupported reports whether Catches can tell on this platform.
const CatchesSupported = false

// SessionsByEnv cannot read other processes' environments on macOS.
func SessionsByEnv(socket string) map[int]string { return nil }
