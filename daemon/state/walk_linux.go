//go:build linux

package state

import (
	"sync"

	"golang.org/x/sys/unix"
)

// walkDirFlags opens the directories of a walk: O_PATH needs no read
// permission, only search, as path resolution itself.
const walkDirFlags = unix.O_PATH

// beneathResolve keeps a resolution below its starting directory and away
// from /proc's magic links.
const beneathResolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

var (
	openat2Once sync.Once
	openat2OK   bool
	// forceWalk makes openBeneath walk even where openat2 works, so that
	// tests cover the fallback.
	forceWalk bool
)

// haveOpenat2 probes openat2 once: kernels before 5.6 say ENOSYS, and some
// container seccomp profiles EPERM.
func haveOpenat2() bool {
	openat2Once.Do(func() {
		fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
		if err == nil {
			unix.Close(fd)
		}
		openat2OK = err != unix.ENOSYS && err != unix.EPERM && err != unix.EINVAL
	})
	return openat2OK && !forceWalk
}

// openBeneath opens rel below the directory dirfd: with openat2 and
// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS, so that ".." or a symlink leaving
// dirfd fails with EXDEV in the kernel, race-free; without it, by walking.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if !haveOpenat2() {
		return walkBeneath(dirfd, rel, flags, mode)
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: beneathResolve}
	if flags&unix.O_CREAT != 0 {
		how.Mode = uint64(mode)
	}
	for range 16 {
		fd, err := unix.Openat2(dirfd, rel, &how)
		// EAGAIN: a rename raced with "..", and the kernel could not vouch
		// for the result; it asks to retry.
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		return fd, err
	}
	return -1, unix.EAGAIN
}

// probeFlags open a path only to learn that it exists: O_PATH opens
// anything without reading it.
const probeFlags = unix.O_PATH
