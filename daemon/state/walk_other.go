//go:build !linux

package state

import "golang.org/x/sys/unix"

// walkDirFlags opens the directories of a walk; without O_PATH, read-only.
const walkDirFlags = unix.O_RDONLY

// openBeneath opens rel below the directory dirfd by walking it (see
// walkBeneath): there is no openat2 outside Linux.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	return walkBeneath(dirfd, rel, flags, mode)
}

// probeFlags open a path only to learn that it exists; without O_PATH,
// read-only and without blocking on a FIFO.
const probeFlags = unix.O_RDONLY | unix.O_NONBLOCK
