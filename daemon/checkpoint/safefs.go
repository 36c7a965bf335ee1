package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openParentBeneath opens the directory that holds rel under top without
// following a symlink on the way: each directory is opened from its parent
// with O_NOFOLLOW. A path that goes through a symlink is not under top;
// for it, and for a missing one, fd is -1 and err nil. A root daemon calls
// it only inside asUser: the kernel then checks each step as the user's.
func openParentBeneath(top, rel string) (fd int, last string, err error) {
	parts := strings.Split(rel, "/")
	fd, err = unix.Open(top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("open %s: %w", top, err)
	}
	for _, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				return -1, "", nil
			}
			return -1, "", fmt.Errorf("open %s: %w", filepath.Join(top, rel), err)
		}
		fd = next
	}
	return fd, parts[len(parts)-1], nil
}

// removeBeneath removes the file (or, with dir, the empty directory) rel
// under top without following a symlink on the way (openParentBeneath); a
// path through a symlink, or a missing one, is left alone. A root daemon
// calls it only inside asUser: the kernel then removes nothing the user
// could not (a sticky directory's other entries, an ACL's refusal),
// wherever top has been made to point.
func removeBeneath(top, rel string, dir bool) error {
	fd, last, err := openParentBeneath(top, rel)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	err = unix.Unlinkat(fd, last, flags)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case dir && (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTDIR)):
		return nil // still holds something (an ignored file): it stays
	}
	return fmt.Errorf("remove %s: %w", filepath.Join(top, rel), err)
}

// What lstatBeneath finds.
const (
	entryNone  = iota // nothing, or a path through a symlink
	entryDir          // a directory
	entryOther        // a file, a symlink, anything else
)

// lstatBeneath says what rel under top is, itself not followed if a
// symlink, found as removeBeneath finds it (inside asUser for a root
// daemon).
func lstatBeneath(top, rel string) (int, error) {
	fd, last, err := openParentBeneath(top, rel)
	if err != nil || fd < 0 {
		return entryNone, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, last, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return entryNone, nil
		}
		return entryNone, fmt.Errorf("stat %s: %w", filepath.Join(top, rel), err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return entryDir, nil
	}
	return entryOther, nil
}

// entriesBeneath calls fn with the path (under top) of everything but a
// directory in the directory rel under top, at any depth, each directory
// opened from its parent without following a symlink, until fn returns
// false (inside asUser for a root daemon).
func entriesBeneath(top, rel string, fn func(rel string) bool) error {
	fd, last, err := openParentBeneath(top, rel)
	if err != nil || fd < 0 {
		return err
	}
	_, err = walkBeneath(fd, last, rel, fn)
	unix.Close(fd)
	return err
}

// walkBeneath is entriesBeneath from the directory name in parent (the
// path rel); it reports whether fn wants more.
func walkBeneath(parent int, name, rel string, fn func(string) bool) (bool, error) {
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return true, nil
		}
		return false, fmt.Errorf("open %s: %w", rel, err)
	}
	dir := os.NewFile(uintptr(fd), rel) // closes fd
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", rel, err)
	}
	for _, e := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, e, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			more, err := walkBeneath(fd, e, rel+"/"+e, fn)
			if err != nil || !more {
				return more, err
			}
			continue
		}
		if !fn(rel + "/" + e) {
			return false, nil
		}
	}
	return true, nil
}
