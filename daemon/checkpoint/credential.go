package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/daemon/identity"
	"github.com/sessiond/sessiond/daemon/state"
	"golang.org/x/sys/unix"
)

// Credential is the user that every git process of one call runs as, and
// that owns what the call creates (temporary indexes, a shadow repository):
// a root daemon checkpoints a user's project with that user's rights, so
// git's own ownership check passes without safe.directory and the kernel
// refuses what the user could not do. HOME is the user's, so git reads the
// user's global config (never the daemon's); a user without a home runs
// git without HOME.
type Credential = identity.User

// sysProcAttr is the process attribute that runs a command as c, or nil
// when c is nil or is the daemon's own user (a non-root process may not
// set its groups, and has no need to).
func sysProcAttr(c *Credential) *syscall.SysProcAttr {
	if c == nil || (os.Geteuid() != 0 && int(c.UID) == os.Geteuid() && int(c.GID) == os.Getegid()) {
		return nil
	}
	return &syscall.SysProcAttr{Credential: c.Credential()}
}

// asUser runs fn with the credential's user's rights (state.Files.Do;
// the daemon's own for nil or its own user). Every file the daemon makes,
// moves, times or removes on a checkpoint's behalf is made so: a shadow
// repository and the temporary indexes lie where the user can swap a
// directory for a symlink, and root's rights would follow it anywhere. As
// the user, the kernel checks each step as the user's, sticky directories
// and ACLs included, and what is made is the user's. fn must do nothing
// but file system calls.
func asUser(c *Credential, fn func() error) error { return state.FilesOf(c).Do(fn) }

// mkdirTemp makes a private temporary directory, as the credential's user.
func mkdirTemp(c *Credential, parent, pattern string) (dir string, err error) {
	err = asUser(c, func() error {
		dir, err = os.MkdirTemp(parent, pattern)
		return err
	})
	return dir, err
}

// removeAll removes path and what it holds, as the credential's user.
func removeAll(c *Credential, path string) error {
	return asUser(c, func() error { return os.RemoveAll(path) })
}

// mkdirAll makes dir and its missing parents (mode 0700), as the
// credential's user.
func mkdirAll(c *Credential, dir string) error {
	return asUser(c, func() error { return os.MkdirAll(dir, 0o700) })
}

// openUserFile opens a file of the user's repository (its index) for
// reading on the daemon's side, through state.Files with the credential's
// user's rights: only a regular file, never blocking, and only one the
// user may read.
func openUserFile(c *Credential, path string) (*os.File, os.FileInfo, error) {
	f, err := state.FilesOf(c).Open(path)
	if err != nil {
		if errors.Is(err, state.ErrFileType) {
			return nil, nil, fmt.Errorf("%s: not a regular file", path)
		}
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, syscall.EACCES) {
			return nil, nil, fmt.Errorf("%s: %w (not readable by uid %d)", path, os.ErrPermission, c.ID())
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// copyUserFile copies the user's file src to dst (created as the
// credential's user) with src's mtime, so that git's racy-entry check sees
// the copy as it would the original. A missing src leaves dst absent.
func copyUserFile(c *Credential, src, dst string) error {
	in, fi, err := openUserFile(c, src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	return asUser(c, func() error { return createFile(dst, in, fi.ModTime()) })
}

// writePrivateFile writes a new file for git to read, as the credential's
// user, with the given mtime (zero: now).
func writePrivateFile(c *Credential, path string, data []byte, mtime time.Time) error {
	return asUser(c, func() error { return createFile(path, bytes.NewReader(data), mtime) })
}

// createFile makes the new file path (mode 0600) with what r holds and,
// unless mtime is zero, that mtime: set on the open file, never through a
// name that may have become a symlink meanwhile.
func createFile(path string, r io.Reader, mtime time.Time) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if !mtime.IsZero() {
		if err := setMtime(f, mtime); err != nil {
			f.Close()
			return fmt.Errorf("set the mtime of %s: %w", path, err)
		}
	}
	return f.Close()
}
