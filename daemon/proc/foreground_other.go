//go:build !linux

package proc

// ForegroundGroup returns 0 where the platform does not tell a process's
// terminal's foreground group.
func ForegroundGroup(pid int) int { return 0 }
