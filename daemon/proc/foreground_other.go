//go:build !linux

package proc

import "golang.org/x/sys/unix"

// SignalForeground does nothing where the platform does not tell a
// process's terminal's foreground group.
func (c *Child) SignalForeground(sig unix.Signal) error { return nil }
