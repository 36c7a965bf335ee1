// Package access maps an API caller to the identity its sessions run with
// and to the project directories it may use: a root daemon serves each
// user with that user's rights, and a user only in directories of their
// own.
package access

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// OpenProject opens a project directory with the rights of the user uid:
// a directory that user cannot reach is one that "does not exist or is not
// accessible", whichever it is.
func OpenProject(dir string, uid int) (*state.Project, *state.Owner, error) {
	if dir == "" {
		return nil, nil, ipc.BadRequest("no project directory given")
	}
	if !filepath.IsAbs(dir) {
		return nil, nil, ipc.BadRequest("project directory %q is not an absolute path", dir)
	}
	owner, err := Owner(uid)
	if err != nil {
		return nil, nil, ipc.Forbidden("%w", err)
	}
	p, err := state.OpenProject(dir, owner)
	if err != nil {
		return nil, nil, ipc.BadRequest("%w", err)
	}
	return p, owner, nil
}

// Owner is the identity a session of user uid runs with: nil (the
// daemon's own) unless a root daemon serves another user.
func Owner(uid int) (*state.Owner, error) {
	if os.Geteuid() != 0 || uid == os.Geteuid() {
		return nil, nil
	}
	return state.LookupOwner(uid)
}

// CheckDir refuses a directory the caller does not own when the daemon
// runs as root for someone else.
func CheckDir(c ipc.Caller, dir string) error {
	if c.Root() || c.UID == os.Geteuid() {
		return nil
	}
	owner, err := Owner(c.UID)
	if err != nil {
		return ipc.Forbidden("%w", err)
	}
	fi, err := state.FilesOf(owner).Stat(dir)
	if err != nil {
		return ipc.BadRequest("%w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != c.UID {
		return ipc.Forbidden("%s belongs to uid %d, not to you (uid %d)", dir, st.Uid, c.UID)
	}
	return nil
}
