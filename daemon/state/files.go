package state

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/sessiond/sessiond/daemon/proc"
	"golang.org/x/sys/unix"
)

// Files is the one way in to a user's files that lie outside a project's
// tree: a path from a spec or a flag (an agent's --settings), from a
// variable (CODEX_HOME, CLAUDE_CONFIG_DIR), from a hook's payload (a
// transcript), an agent's home. Every method runs with the user's rights
// (see the package documentation), opens non-blocking and never as a
// controlling terminal, takes regular files only where it reads, bounds
// what it reads, and hands back a handle or the bytes, never a path to
// open again: so that what the daemon learns from a user's files is what
// the user could have read, and no file a user names can block it. A
// project's own files go through Project, which also keeps them beneath
// the project.
type Files struct {
	owner *Owner
}

// FilesOf returns the files as owner reaches them; nil is the daemon's own
// rights (a user daemon, or root's own session).
func FilesOf(owner *Owner) Files {
	if !owner.Switches() {
		owner = nil
	}
	return Files{owner: owner}
}

// Owner returns whose rights f has (nil: the daemon's own).
func (f Files) Owner() *Owner { return f.owner }

// Open opens the regular file path (absolute) for reading, with the
// user's rights. A FIFO, device, socket or directory is refused with an
// error matching ErrFileType; a missing file gives one wrapping
// fs.ErrNotExist.
func (f Files) Open(path string) (*os.File, error) {
	if !f.absolute(path) {
		return nil, fmt.Errorf("open %q: not an absolute path", path)
	}
	var fd int
	err := runAs(f.owner, func() error {
		var err error
		if fd, err = openat(unix.AT_FDCWD, path, inputFlags, 0); err != nil {
			return &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if mode := uint32(st.Mode); mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, notRegular(path, mode)
	}
	// A regular file ignores O_NONBLOCK; clearing it keeps reads plain.
	_ = clearNonblock(fd)
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile reads the regular file path (absolute) with the user's rights,
// at most limit bytes: a larger file gives an error matching ErrTooLarge.
func (f Files) ReadFile(path string, limit int64) ([]byte, error) {
	if !f.absolute(path) {
		return nil, fmt.Errorf("read %q: not an absolute path", path)
	}
	var data []byte
	err := runAs(f.owner, func() error {
		fd, err := openat(unix.AT_FDCWD, path, inputFlags, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: path, Err: err}
		}
		data, _, err = readOpened(fd, path, limit)
		return err
	})
	return data, err
}

// Stat returns what path (absolute, followed through symlinks) is, as the
// user sees it.
func (f Files) Stat(path string) (fs.FileInfo, error) {
	if !f.absolute(path) {
		return nil, fmt.Errorf("stat %q: not an absolute path", path)
	}
	var fi fs.FileInfo
	err := runAs(f.owner, func() error {
		var err error
		fi, err = os.Stat(path)
		return err
	})
	return fi, err
}

// ReadDir lists the directory path (absolute) as the user, at most max
// entries (0: no bound), sorted by name, each with what it is as the user
// sees it (not followed through symlinks): nothing a caller asks of an
// entry later runs with other rights.
func (f Files) ReadDir(path string, max int) ([]fs.FileInfo, error) {
	if !f.absolute(path) {
		return nil, fmt.Errorf("list %q: not an absolute path", path)
	}
	var out []fs.FileInfo
	err := runAs(f.owner, func() error {
		fd, err := openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: path, Err: err}
		}
		d := os.NewFile(uintptr(fd), path)
		defer d.Close()
		n := -1
		if max > 0 {
			n = max
		}
		names, err := d.Readdirnames(n)
		if err != nil && len(names) == 0 {
			return err
		}
		sort.Strings(names)
		for _, name := range names {
			if fi, err := os.Lstat(filepath.Join(path, name)); err == nil {
				out = append(out, fi)
			}
		}
		return nil
	})
	return out, err
}

// Resolve returns path (absolute) with its symlinks resolved, as the user
// resolves them.
func (f Files) Resolve(path string) (string, error) {
	if !f.absolute(path) {
		return "", fmt.Errorf("resolve %q: not an absolute path", path)
	}
	var out string
	err := runAs(f.owner, func() error {
		var err error
		out, err = filepath.EvalSymlinks(path)
		return err
	})
	return out, err
}

// Do runs fn with the user's rights, for code that walks a user's tree
// itself (the project watcher's scans): every file system call fn makes is
// checked by the kernel as the user's. fn must do nothing but that.
func (f Files) Do(fn func() error) error { return runAs(f.owner, fn) }

// absolute reports whether path may be used: an absolute path, or any path
// for the daemon's own rights (relative to its working directory).
func (f Files) absolute(path string) bool { return f.owner == nil || filepath.IsAbs(path) }

// LookPath finds argv0 as proc.LookPath does (a name with a slash relative
// to dir, any other on the PATH of env), with the user's rights: a root
// daemon says no more of a path than the user could learn of it.
func (f Files) LookPath(argv0, dir string, env []string) (path string, err error) {
	derr := f.Do(func() error {
		path, err = proc.LookPath(argv0, dir, env)
		return nil
	})
	if derr != nil {
		return "", derr
	}
	return path, err
}
