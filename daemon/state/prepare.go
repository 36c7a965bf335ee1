package state

import (
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// PrepareEnd makes, in the project's .sessiond, the empty files a
// session's end writes into where they are missing: the spares of
// handoff.json and session_state.json (see writeReusing) and, while the
// progress log progress ("" for .sessiond/progress.md) is one of
// .sessiond's files and not made yet, its spare (see createFromSpare). The
// end then makes no inode in the project. On ext4, finding a free inode
// among many recently freed ones was a fifth of the daemon's time when a
// thousand sessions ended at once (bench/README.md, "The ninth pass"). The
// daemon calls it after a session has started, once starts pause. The
// files are made with the owner's rights; one that cannot be made is left
// to the end to make, as before.
func (p *Project) PrepareEnd(progress string) error {
	if !canExchange {
		return nil
	}
	log, inStateDir := stateDirFile(progress)
	return p.stateFile("", true, func(sfd int, dir string) error {
		for _, name := range []string{HandoffFile, SessionStateFile} {
			if err := makeEmpty(sfd, dir, SpareName(name)); err != nil {
				return err
			}
		}
		var st unix.Stat_t
		if inStateDir && fstatat(sfd, log, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT {
			return makeEmpty(sfd, dir, SpareName(log))
		}
		return nil
	})
}

// stateDirFile is the name in .sessiond of the progress log rel when it is
// one of .sessiond's own files.
func stateDirFile(rel string) (string, bool) {
	if rel == "" {
		return ProgressFile, true
	}
	dir, name, ok := strings.Cut(filepath.ToSlash(filepath.Clean(rel)), "/")
	if !ok || dir != DirName || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// MakeSpare makes the empty spare of name in dir, one of the daemon's own
// directories, unless something is there already: the file a later
// WriteJSONReusing or SaveHandoff of name writes into, no inode made then.
func MakeSpare(dir, name string) error {
	if !canExchange {
		return nil
	}
	dfd, err := openDir(dir)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return makeEmpty(dfd, dir, SpareName(name))
}

// makeEmpty makes the empty file name (mode 0600) in dirfd, the directory
// dir, unless something is there already.
func makeEmpty(dirfd int, dir, name string) error {
	fd, err := openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
	switch err {
	case nil:
		return unix.Close(fd)
	case unix.EEXIST:
		return nil
	}
	return &fs.PathError{Op: "create", Path: filepath.Join(dir, name), Err: err}
}
