//go:build linux && (386 || arm)

package state

import "golang.org/x/sys/unix"

// On 386 and arm the plain calls take 16-bit ids; the 32 variants take gid_t.
const (
	sysSetgroups = unix.SYS_SETGROUPS32
	sysSetfsuid  = unix.SYS_SETFSUID32
	sysSetfsgid  = unix.SYS_SETFSGID32
)
