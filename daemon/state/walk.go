package state

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks is how many symlinks one resolution follows, as Linux allows.
const maxSymlinks = 40

// walkBeneath opens rel below the directory dirfd one component at a time,
// the way openat2(RESOLVE_BENEATH) does where the kernel lacks it: every
// directory is opened with O_NOFOLLOW relative to the previous one, a
// relative symlink is followed by splicing its target into the path, and an
// absolute symlink, an absolute rel or a ".." above dirfd fails with EXDEV.
// ".." pops the directories actually opened, so it means what the kernel
// means by it. A symlink as the last component is followed unless flags has
// O_NOFOLLOW (then ELOOP); the last open itself has O_NOFOLLOW, so a
// symlink swapped in after the check is never followed.
func walkBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if strings.IndexByte(rel, 0) >= 0 {
		return -1, unix.EINVAL
	}
	if filepath.IsAbs(rel) {
		return -1, unix.EXDEV
	}
	if rel == "" {
		return -1, unix.ENOENT
	}
	parts := strings.Split(rel, "/")
	var opened []int // directories below dirfd, innermost last
	defer func() {
		for _, fd := range opened {
			unix.Close(fd)
		}
	}()
	cur := func() int {
		if len(opened) == 0 {
			return dirfd
		}
		return opened[len(opened)-1]
	}
	links := 0
	for len(parts) > 0 {
		name := parts[0]
		parts = parts[1:]
		last := len(parts) == 0
		switch name {
		case "", ".":
			if last {
				return openat(cur(), ".", flags, mode)
			}
			continue
		case "..":
			if len(opened) == 0 {
				return -1, unix.EXDEV
			}
			unix.Close(opened[len(opened)-1])
			opened = opened[:len(opened)-1]
			if last {
				return openat(cur(), ".", flags, mode)
			}
			continue
		}
		var st unix.Stat_t
		err := fstatat(cur(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if last && flags&unix.O_NOFOLLOW != 0 {
				return -1, unix.ELOOP
			}
			if links++; links > maxSymlinks {
				return -1, unix.ELOOP
			}
			target, err := readlinkat(cur(), name)
			if err != nil {
				return -1, err
			}
			if filepath.IsAbs(target) {
				return -1, unix.EXDEV
			}
			parts = append(strings.Split(target, "/"), parts...)
			continue
		}
		if last {
			return openat(cur(), name, flags|unix.O_NOFOLLOW, mode)
		}
		if err != nil {
			return -1, err
		}
		fd, err := openat(cur(), name, walkDirFlags|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return -1, err
		}
		opened = append(opened, fd)
	}
	return openat(cur(), ".", flags, mode)
}

// openat is unix.Openat with O_CLOEXEC, retried on EINTR.
func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_CLOEXEC, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fstatat(dirfd int, name string, st *unix.Stat_t, flags int) error {
	for {
		err := unix.Fstatat(dirfd, name, st, flags)
		if err != unix.EINTR {
			return err
		}
	}
}

// readlinkat returns the target of the symlink name in dirfd.
func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err == unix.EINTR {
			size /= 2
			continue
		}
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size > 1<<16 {
			return "", unix.ENAMETOOLONG
		}
	}
}
