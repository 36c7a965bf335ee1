package logfile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openFile is os.OpenFile for a log's files, without the runtime's
// poller: a regular file is never pollable, and os.OpenFile finds that out
// at every open with five system calls (the descriptor made non-blocking,
// refused by epoll, made blocking again). os.NewFile asks one.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
