package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/daemon/identity"
	"github.com/sessiond/sessiond/daemon/state"
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

// own gives path to the credential's user (nothing for nil), without
// following a symlink.
func own(c *Credential, path string) error {
	if c == nil || int(c.UID) == os.Geteuid() {
		return nil
	}
	if err := os.Lchown(path, int(c.UID), int(c.GID)); err != nil {
		return fmt.Errorf("give %s to uid %d: %w", path, c.UID, err)
	}
	return nil
}

// mkdirTemp makes a private temporary directory owned by the credential's
// user.
func mkdirTemp(c *Credential, parent, pattern string) (string, error) {
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return "", err
	}
	if err := own(c, dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// mkdirAll makes dir and its missing parents (mode 0700), giving each one
// it makes to the credential's user.
func mkdirAll(c *Credential, dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := own(c, missing[i]); err != nil {
			return err
		}
	}
	return nil
}

// mayWriteDir reports whether the credential's user may create and remove
// entries in a directory with the given owner and mode.
func mayWriteDir(c *Credential, uid, gid, mode uint32) bool {
	switch {
	case int(uid) == c.UID:
		return mode&0o300 == 0o300
	case int(gid) == c.GID || slices.Contains(c.Groups, int(gid)):
		return mode&0o030 == 0o030
	default:
		return mode&0o003 == 0o003
	}
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

// copyUserFile copies the user's file src to dst (created, owned by the
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
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := own(c, dst); err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// writePrivateFile writes a new file for git to read, owned by the
// credential's user, with the given mtime (zero: now).
func writePrivateFile(c *Credential, path string, data []byte, mtime time.Time) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := own(c, path); err != nil {
		return err
	}
	if !mtime.IsZero() {
		return os.Chtimes(path, mtime, mtime)
	}
	return nil
}
