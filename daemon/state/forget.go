package state

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// RemoveInSessions removes the file name from each session's directory
// of the state dir stateDir (STATE/sessions/ID/name), without following a
// symlink on the way: each directory is opened from its parent with
// O_NOFOLLOW and name unlinked from it (a symlink in its place is removed
// itself). For a state dir in a user's project (sessiond exec's), which
// the user may have changed under it.
func RemoveInSessions(stateDir, name string) error {
	root, err := openat(unix.AT_FDCWD, filepath.Join(stateDir, "sessions"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return &fs.PathError{Op: "open directory", Path: filepath.Join(stateDir, "sessions"), Err: err}
	}
	d := os.NewFile(uintptr(root), filepath.Join(stateDir, "sessions"))
	defer d.Close()
	ids, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	var first error
	for _, id := range ids {
		fd, err := openat(root, id, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue // not a session's directory
		}
		if err := unix.Unlinkat(fd, name, 0); err != nil && err != unix.ENOENT && first == nil {
			first = &fs.PathError{Op: "remove", Path: filepath.Join(stateDir, "sessions", id, name), Err: err}
		}
		unix.Close(fd)
	}
	return first
}
