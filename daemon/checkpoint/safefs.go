package checkpoint

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// removeBeneath removes the file (or, with dir, the empty directory) rel
// under top without following a symlink on the way: each directory is
// opened from its parent with O_NOFOLLOW, and the entry is unlinked from the
// last one. A path that goes through a symlink is not under top, and is
// left alone; so is a missing one. A root daemon calls it only inside
// asUser: the kernel then removes nothing the user could not (a sticky
// directory's other entries, an ACL's refusal), wherever top has been
// made to point.
func removeBeneath(top, rel string, dir bool) error {
	parts := strings.Split(rel, "/")
	fd, err := unix.Open(top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", top, err)
	}
	for _, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				return nil
			}
			return fmt.Errorf("remove %s: %w", filepath.Join(top, rel), err)
		}
		fd = next
	}
	defer unix.Close(fd)
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	err = unix.Unlinkat(fd, parts[len(parts)-1], flags)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case dir && (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTDIR)):
		return nil // still holds something (an ignored file): it stays
	}
	return fmt.Errorf("remove %s: %w", filepath.Join(top, rel), err)
}
