package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrProjectUnreachable is matched by errors.Is when a project directory
// does not exist or its owner cannot reach it. Which of the two is not
// said: telling them apart would tell a user about paths they cannot list.
var ErrProjectUnreachable = errors.New("project directory does not exist or is not accessible")

// Project is a handle on one project directory for the daemon: every method
// does its work in or about the project with the filesystem identity of the
// project's owner (see the package documentation), and every project path
// it takes resolves inside the project. A Project holds no open file; each
// method opens what it needs and closes it. It is safe for concurrent use,
// though the daemon serialises the operations of one session anyway.
type Project struct {
	dir   string
	owner *Owner // nil: the daemon's own rights
	// held are the directories a Hold opened once for the operations
	// inside it (nil outside one).
	held *heldDirs
}

// heldDirs are the project directory and its .sessiond (-1 until an
// operation needs it), open for the length of a Hold.
type heldDirs struct {
	root, sd int
}

// Hold runs fn with a handle of the project whose operations share one
// opening of the project directory and of its .sessiond, under the
// owner's identity taken once: the steps of a session's end cost one walk
// of the path, not one each. The handle is valid only inside fn, and fn
// must do nothing but the project's operations (it runs as the owner).
func (p *Project) Hold(fn func(q *Project) error) error {
	if p.held != nil {
		return fn(p)
	}
	return p.do(func(root int) error {
		q := &Project{dir: p.dir, owner: p.owner, held: &heldDirs{root: root, sd: -1}}
		defer func() {
			if q.held.sd >= 0 {
				unix.Close(q.held.sd)
			}
		}()
		return fn(q)
	})
}

// OpenProject returns the handle for the project directory dir, resolved
// (symlinks followed) with owner's rights. A nil owner, or one whose uid is
// the daemon's effective uid, means the daemon's own rights, with no thread
// switch. dir must exist and be a directory the owner can open; otherwise
// the error, the same for every reason, says that it "does not exist or is
// not accessible to uid N" and matches ErrProjectUnreachable. Nothing is
// created: EnsureStateDir does that.
func OpenProject(dir string, owner *Owner) (*Project, error) {
	if err := owner.Validate(); err != nil {
		return nil, err
	}
	if !owner.Switches() {
		owner = nil
	}
	if !filepath.IsAbs(dir) {
		if owner != nil {
			return nil, fmt.Errorf("project directory %q is not an absolute path", dir)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("project directory %q: %w", dir, err)
		}
		dir = abs
	}
	p := &Project{owner: owner}
	err := runAs(owner, func() error {
		resolved, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return p.unreachable(dir, err)
		}
		fd, err := openat(unix.AT_FDCWD, resolved, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return p.unreachable(dir, err)
		}
		unix.Close(fd)
		p.dir = resolved
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Dir returns the project's absolute path with symlinks resolved.
func (p *Project) Dir() string { return p.dir }

// StateDir returns the path of the project's .sessiond directory.
func (p *Project) StateDir() string { return filepath.Join(p.dir, DirName) }

// unreachable is the one error for a project directory that is missing, not
// a directory, or not reachable with the owner's rights.
func (p *Project) unreachable(dir string, err error) error {
	for _, e := range []error{unix.ENOENT, unix.ENOTDIR, unix.EACCES, unix.EPERM, unix.ELOOP, unix.ENAMETOOLONG} {
		if errors.Is(err, e) {
			return &unreachableError{dir: dir, uid: p.owner.ID()}
		}
	}
	return fmt.Errorf("open project directory %s: %w", dir, err)
}

// unreachableError is ErrProjectUnreachable for one directory and user.
type unreachableError struct {
	dir string
	uid int
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("project directory %s does not exist or is not accessible to uid %d", e.dir, e.uid)
}

func (e *unreachableError) Is(target error) bool { return target == ErrProjectUnreachable }

// do runs fn with the owner's identity and a directory fd of the project.
func (p *Project) do(fn func(root int) error) error {
	if p.held != nil {
		return fn(p.held.root)
	}
	return runAs(p.owner, func() error {
		root, err := openat(unix.AT_FDCWD, p.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return p.unreachable(p.dir, err)
		}
		defer unix.Close(root)
		return fn(root)
	})
}

// display is the path of rel in the project, for messages.
func (p *Project) display(rel string) string {
	if filepath.IsLocal(rel) {
		return filepath.Join(p.dir, rel)
	}
	return p.dir + "/" + rel
}

// withStateDir runs fn with the project's .sessiond below root, creating
// it (mode 0700) if create is set. A .sessiond that is a symlink or not a
// directory is refused; the mode is set to 0700 through the opened
// descriptor, so it can only ever change the directory that was checked.
// Without create, a missing .sessiond gives an error wrapping
// fs.ErrNotExist. Inside a Hold it is the Hold's own descriptor, opened
// by the first call and closed by the Hold, neither duplicated nor closed
// here (the ends of a thousand sessions at once make several such calls
// each); fn must not close it.
func (p *Project) withStateDir(root int, create bool, fn func(sfd int) error) error {
	if h := p.held; h != nil && h.root == root {
		if h.sd < 0 {
			fd, err := p.openStateDir(root, create)
			if err != nil {
				return err
			}
			h.sd = fd
		}
		return fn(h.sd)
	}
	sfd, err := p.openStateDir(root, create)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	return fn(sfd)
}

func (p *Project) openStateDir(root int, create bool) (int, error) {
	sd := p.StateDir()
	if create {
		if err := unix.Mkdirat(root, DirName, 0o700); err != nil && err != unix.EEXIST {
			if err == unix.EACCES || err == unix.EPERM || err == unix.EROFS {
				return -1, fmt.Errorf("create %s: %w (uid %d cannot write the project directory)", sd, err, p.owner.ID())
			}
			return -1, &fs.PathError{Op: "create", Path: sd, Err: err}
		}
	}
	fd, err := openat(root, DirName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		var st unix.Stat_t
		if (err == unix.ELOOP || err == unix.ENOTDIR) && fstatat(root, DirName, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return -1, fmt.Errorf("refused: %s is a symlink, not a directory: %w", sd, ErrFileType)
			}
			return -1, fmt.Errorf("project state directory %s exists and is %s, not a directory: %w", sd, fileKind(uint32(st.Mode)), ErrFileType)
		}
		return -1, &fs.PathError{Op: "open", Path: sd, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "stat", Path: sd, Err: err}
	}
	// Chmod only when needed: a needless one still dirties the inode, and
	// the next directory fsync then has to write it.
	if st.Mode&0o7777 != 0o700 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			unix.Close(fd)
			return -1, &fs.PathError{Op: "set mode of", Path: sd, Err: err}
		}
	}
	return fd, nil
}

// EnsureStateDir makes the project ready for a session: it creates
// .sessiond (mode 0700; a symlink or a non-directory there is refused),
// removes the temporary files that interrupted writes left in it (see
// RemoveStaleTemps), and adds .sessiond to the repository's
// .git/info/exclude (see excludeFromGit), all with the owner's rights. The
// daemon calls it when a session starts. If only the exclude could not be
// updated the error matches ErrGitExclude and the directory is usable. The
// other methods create .sessiond when they need it but leave the exclude
// file alone.
func (p *Project) EnsureStateDir() error {
	return p.do(func(root int) error {
		err := p.withStateDir(root, true, func(sfd int) error {
			// Temporary files that cannot be removed are harmless, and the
			// next start tries again: nothing to report.
			if dup, err := unix.Dup(sfd); err == nil {
				_, _ = removeStaleTempsAt(dup, p.StateDir(), 0, time.Now().Add(-StaleTempAge))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := excludeFromGit(p.dir); err != nil {
			return &excludeError{dir: p.StateDir(), err: err}
		}
		return nil
	})
}

// EnsureSubdir makes the directory name in the project's .sessiond (mode
// 0700, as the owner; a symlink or a non-directory in the way of either is
// refused) and returns its path: sessiond exec keeps its state there.
func (p *Project) EnsureSubdir(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return "", fmt.Errorf("make %q in %s: not a file name", name, p.StateDir())
	}
	path := filepath.Join(p.StateDir(), name)
	err := p.do(func(root int) error {
		return p.withStateDir(root, true, func(sfd int) error {
			if err := unix.Mkdirat(sfd, name, 0o700); err != nil && err != unix.EEXIST {
				return &fs.PathError{Op: "create", Path: path, Err: err}
			}
			fd, err := openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
			if err != nil {
				return openError(sfd, name, path, err)
			}
			defer unix.Close(fd)
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return &fs.PathError{Op: "stat", Path: path, Err: err}
			}
			if st.Mode&0o7777 != 0o700 {
				return unix.Fchmod(fd, 0o700)
			}
			return nil
		})
	})
	return path, err
}

// excludeError says that .sessiond could not be kept out of git.
type excludeError struct {
	dir string
	err error
}

func (e *excludeError) Error() string        { return fmt.Sprintf("keep %s out of git: %v", e.dir, e.err) }
func (e *excludeError) Unwrap() error        { return e.err }
func (e *excludeError) Is(target error) bool { return target == ErrGitExclude }

// stateFile runs fn with the opened .sessiond (created if create is set),
// and the path of name in it for messages.
func (p *Project) stateFile(name string, create bool, fn func(sfd int, display string) error) error {
	return p.do(func(root int) error {
		return p.withStateDir(root, create, func(sfd int) error {
			return fn(sfd, filepath.Join(p.StateDir(), name))
		})
	})
}

// writeState writes data to the file name in .sessiond atomically, mode 0600.
func (p *Project) writeState(name string, data []byte) error {
	return p.writeStateWith(name, data, durable)
}

// writeStateWith is writeState with the durability d.
func (p *Project) writeStateWith(name string, data []byte, d durability) error {
	return p.stateFile(name, true, func(sfd int, display string) error {
		return writeAtWith(sfd, name, display, data, 0o600, d)
	})
}

// writeStateReusing writes data to the file name in .sessiond as
// writeState does, into the file's spare when it has one (writeReusing):
// the files rewritten at every start or end (the handoff, the session
// state, context.md, the lock) take and free no inode after the first.
func (p *Project) writeStateReusing(name string, data []byte) error {
	return p.writeStateReusingWith(name, data, durable)
}

// writeStateReusingWith is writeStateReusing with the durability d.
func (p *Project) writeStateReusingWith(name string, data []byte, d durability) error {
	return p.stateFile(name, true, func(sfd int, display string) error {
		return writeReusing(sfd, name, display, data, 0o600, d)
	})
}

// retireState removes the file name from .sessiond for readers, keeping it
// as the spare of the next writeStateReusing (retireAt); missing is no
// error.
func (p *Project) retireState(name string) error {
	return p.stateFile(name, false, func(sfd int, display string) error {
		return retireAt(sfd, name, display)
	})
}

// removeState removes the file name from .sessiond, and its spare;
// missing is no error.
func (p *Project) removeState(name string) error {
	return p.stateFile(name, false, func(sfd int, display string) error {
		if err := removeAt(sfd, "."+name+spareMark, display+spareMark); err != nil {
			return err
		}
		return removeAt(sfd, name, display)
	})
}

// readStateJSON decodes the JSON file name of .sessiond into v. A missing
// file (or .sessiond) gives an error wrapping fs.ErrNotExist; a symlink, a
// FIFO or a device is refused; a corrupt or oversized file is moved aside
// and gives a *CorruptError.
func (p *Project) readStateJSON(name string, limit int64, v any) error {
	return p.stateFile(name, false, func(sfd int, display string) error {
		return readJSONAt(sfd, name, display, limit, true, v)
	})
}

// readJSONAt reads and decodes name in dirfd, moving a corrupt or oversized
// file aside (see moveAsideAt).
func readJSONAt(dirfd int, name, display string, limit int64, nofollow bool, v any) error {
	data, _, err := readAt(dirfd, name, display, limit, nofollow)
	if errors.Is(err, ErrTooLarge) {
		return moveAsideAt(dirfd, name, display, err)
	}
	if err != nil {
		return err
	}
	if err := decodeJSON(data, v); err != nil {
		return moveAsideAt(dirfd, name, display, err)
	}
	return nil
}

// openInProject opens rel below root, confined to the project: rel must be
// relative and stay inside, and a symlink on the way that leaves the
// project is refused (EXDEV from openat2, or from the walk).
func (p *Project) openInProject(root int, rel string, flags int, mode uint32) (int, error) {
	if !filepath.IsLocal(rel) {
		return -1, refused(rel, p.dir)
	}
	fd, err := openBeneath(root, rel, flags, mode)
	if err == unix.EXDEV {
		return -1, refused(rel, p.dir)
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: p.display(rel), Err: err}
	}
	return fd, nil
}

// ReadFile reads the project file rel (relative to the project, confined to
// it) as an input: opened non-blocking, required to be a regular file, and
// at most limit bytes. A missing file gives an error wrapping
// fs.ErrNotExist; a path that leaves the project, ErrOutsideProject; a
// FIFO, device, socket or directory, ErrFileType; a larger file,
// ErrTooLarge. Errors never hold the file's content.
func (p *Project) ReadFile(rel string, limit int64) ([]byte, error) {
	var data []byte
	err := p.do(func(root int) error {
		fd, err := p.openInProject(root, rel, inputFlags, 0)
		if err != nil {
			return err
		}
		data, _, err = readOpened(fd, p.display(rel), limit)
		return err
	})
	return data, err
}

// ReadConfig returns the bytes of the project's sessiond.toml (at most
// MaxConfigSize), for the config package to parse; a missing file gives an
// error wrapping fs.ErrNotExist. See ReadFile.
func (p *Project) ReadConfig() ([]byte, error) {
	return p.ReadFile(ProjectConfigFile, MaxConfigSize)
}

// resolveForWrite finds where a write to the project file rel lands: the
// directory holding it, opened confined to the project, and its name
// there. A symlink as the last component is followed (as long as it stays
// inside the project) so that the file it points to is replaced, not the
// link; every directory on the way is resolved inside the project.
func (p *Project) resolveForWrite(root int, rel string) (dirfd int, name, display string, err error) {
	if !filepath.IsLocal(rel) {
		return -1, "", "", refused(rel, p.dir)
	}
	cur := filepath.ToSlash(rel)
	for range maxSymlinks {
		dir, name := path.Split(cur)
		if name == "" || name == "." || name == ".." {
			return -1, "", "", fmt.Errorf("%s is not a file name", p.display(rel))
		}
		dirRel := strings.TrimSuffix(dir, "/")
		if dirRel == "" {
			dirRel = "."
		}
		dfd, err := openBeneath(root, dirRel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		switch {
		case err == unix.EXDEV:
			return -1, "", "", refused(rel, p.dir)
		case err == unix.ENOENT:
			return -1, "", "", fmt.Errorf("directory of %s does not exist: %w", p.display(rel), fs.ErrNotExist)
		case err != nil:
			return -1, "", "", &fs.PathError{Op: "open directory of", Path: p.display(rel), Err: err}
		}
		var st unix.Stat_t
		if fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return dfd, name, p.display(cur), nil
		}
		target, err := readlinkat(dfd, name)
		unix.Close(dfd)
		if err != nil {
			return -1, "", "", &fs.PathError{Op: "read symlink", Path: p.display(cur), Err: err}
		}
		if path.IsAbs(target) {
			return -1, "", "", refused(rel, p.dir)
		}
		cur = dir + target
	}
	return -1, "", "", &fs.PathError{Op: "resolve", Path: p.display(rel), Err: unix.ELOOP}
}

// ProjectDir is EnsureStateDir for a program acting as itself: it creates
// project's .sessiond (mode 0700), refusing a symlink or a non-directory
// there, and keeps it out of git, failing if that fails. It returns the
// .sessiond path.
func ProjectDir(project string) (string, error) {
	p, err := OpenProject(project, nil)
	if err != nil {
		return "", err
	}
	if err := p.EnsureStateDir(); err != nil {
		return "", err
	}
	return filepath.Join(project, DirName), nil
}

// ensureParent makes the directory of path ready for writing: a project's
// .sessiond through ProjectDir (so it is kept out of git whichever file is
// written first), any other missing directory with mode 0700.
func ensureParent(path string) error {
	dir := filepath.Dir(path)
	if filepath.Base(dir) == DirName {
		_, err := ProjectDir(filepath.Dir(dir))
		return err
	}
	return os.MkdirAll(dir, 0o700)
}

// Existing returns those of the project paths rels (slash-separated,
// relative to the project) that exist now, looked up as the owner and
// inside the project, in their order: what a session changed, less the
// temporary files it made and removed.
func (p *Project) Existing(rels []string) []string {
	var out []string
	_ = p.do(func(root int) error {
		for _, rel := range rels {
			fd, err := p.openInProject(root, filepath.FromSlash(rel), probeFlags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
				out = append(out, rel)
			}
		}
		return nil
	})
	return out
}

// accountLocks serialise, in this process, the Exclusively sections of
// each project directory.
var accountLocks sync.Map // dir -> *sync.Mutex

// Exclusively runs fn as Hold does, and as the only one of its project:
// no other Exclusively section of the project runs meanwhile, in this
// process (a mutex) or in another sessiond (an flock on its .sessiond,
// which it creates). The end of a session reads the project's session
// state, builds its account from it and writes it in one such section, so
// that ends that happen together each build on the one before.
func (p *Project) Exclusively(fn func(q *Project) error) error {
	mu, _ := accountLocks.LoadOrStore(p.dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	return p.Hold(func(q *Project) error {
		// The lock goes with the Hold's descriptor, closed once fn is done.
		return q.withStateDir(q.held.root, true, func(sd int) error {
			if err := flock(sd); err != nil {
				return fmt.Errorf("lock %s: %w", q.StateDir(), err)
			}
			return fn(q)
		})
	})
}
