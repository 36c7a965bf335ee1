//go:build linux && !(386 || arm)

package state

import "golang.org/x/sys/unix"

// The system calls that take 32-bit ids on this architecture.
const (
	sysSetgroups = unix.SYS_SETGROUPS
	sysSetfsuid  = unix.SYS_SETFSUID
	sysSetfsgid  = unix.SYS_SETFSGID
)
