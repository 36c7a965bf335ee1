//go:build !linux

package state

import "golang.org/x/sys/unix"

// existsFlags open a path only to see that it is there; without O_PATH a
// read-only open that does not wait (a FIFO) does.
const existsFlags = unix.O_RDONLY | unix.O_NONBLOCK
