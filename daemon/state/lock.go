package state

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// Lock is the project's session.lock: present only while a session runs, so
// that a daemon restarting after a crash can tell an unobserved end (lock
// present, process gone) from a live session it should adopt (same PID and
// same start time, on the same boot).
type Lock struct {
	SessionID string `json:"session_id"`
	DaemonPID int    `json:"daemon_pid"`
	ChildPID  int    `json:"child_pid"`
	// ChildStartTime is field 22 of /proc/PID/stat: clock ticks after boot.
	ChildStartTime uint64    `json:"child_start_time"`
	BootID         string    `json:"boot_id"`
	CreatedAt      time.Time `json:"created_at"`
}

// WriteLock writes the project's lock file atomically (mode 0600),
// replacing any earlier one: use it to update the lock of a session that
// holds it. Its content is synced before it takes the name, the name is
// not: a crash of the machine leaves the old lock or the new one, either
// telling the next start here of a session that ended uncleanly. The lock
// is for people and for that notice; recovery reads the session records.
func (p *Project) WriteLock(l *Lock) error {
	if l == nil {
		return errors.New("write lock: nil lock")
	}
	e, err := encodeJSON(l)
	if err == nil {
		err = p.writeStateReusingWith(LockFile, e.indented, contentOnly)
		e.put()
	}
	if err != nil {
		return fmt.Errorf("write lock: %w", err)
	}
	return nil
}

// CreateLock writes the project's lock file only if there is none, in one
// atomic step (the complete file is linked into place). If a lock exists the
// error wraps fs.ErrExist; the caller reads it with ReadLock to decide
// whether its session is still alive.
func (p *Project) CreateLock(l *Lock) error {
	if l == nil {
		return errors.New("create lock: nil lock")
	}
	data, err := marshalJSON(l)
	if err == nil {
		err = p.stateFile(LockFile, true, func(sfd int, display string) error {
			return createAt(sfd, LockFile, display, data, 0o600)
		})
	}
	if err != nil {
		return fmt.Errorf("create lock: %w", err)
	}
	return nil
}

// ReadLock reads the project's lock file. A missing lock gives an error
// wrapping fs.ErrNotExist; a corrupt one is moved aside and gives a
// *CorruptError, which still means a session ended uncleanly.
func (p *Project) ReadLock() (*Lock, error) {
	var l Lock
	if err := p.readStateJSON(LockFile, MaxSmallFileSize, &l); err != nil {
		return nil, fmt.Errorf("read lock: %w", err)
	}
	return &l, nil
}

// RemoveLock removes the project's lock file; a missing one is not an
// error. The file stays as .session.lock.spare, which the next WriteLock
// writes into (retireAt).
func (p *Project) RemoveLock() error {
	if err := p.retireState(LockFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove lock: %w", err)
	}
	return nil
}

// createAt writes data to a temporary file in dirfd and links it to name
// only if name does not exist: the link fails with EEXIST if it does, and
// readers never see a partial file. The error then wraps fs.ErrExist.
func createAt(dirfd int, name, display string, data []byte, perm uint32) error {
	tmp, fd, err := createTemp(dirfd, name)
	if err != nil {
		return fmt.Errorf("create %s: %w", display, err)
	}
	defer unix.Unlinkat(dirfd, tmp, 0)
	err = writeAll(fd, data)
	if err == nil {
		err = unix.Fchmod(fd, perm)
	}
	if err == nil {
		err = fsyncCounted(fd)
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		err = unix.Linkat(dirfd, tmp, dirfd, name, 0)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", display, err)
	}
	return syncDirFD(dirfd)
}

// Warning is warning.json, written at the session's warning time so that an
// agent can read how long it has left and what to do.
type Warning struct {
	SessionID string    `json:"session_id"`
	WarnedAt  time.Time `json:"warned_at"`
	Deadline  time.Time `json:"deadline"`
	// TimeLeftSeconds is the time from WarnedAt to Deadline.
	TimeLeftSeconds int64  `json:"time_left_seconds"`
	Message         string `json:"message"`
}

// WriteWarning writes the project's warning.json atomically (mode 0600),
// filling TimeLeftSeconds from the two times.
func (p *Project) WriteWarning(w *Warning) error {
	if w == nil {
		return errors.New("write warning: nil warning")
	}
	w.TimeLeftSeconds = max(0, int64(w.Deadline.Sub(w.WarnedAt).Round(time.Second)/time.Second))
	w.Message = storeEscape(w.Message)
	e, err := encodeJSON(w)
	if err == nil {
		err = p.writeStateReusing(WarningFile, e.indented)
		e.put()
	}
	if err != nil {
		return fmt.Errorf("write warning: %w", err)
	}
	return nil
}

// ReadWarning reads the project's warning.json. A missing file gives an
// error wrapping fs.ErrNotExist; a corrupt one is moved aside and gives a
// *CorruptError.
func (p *Project) ReadWarning() (*Warning, error) {
	var w Warning
	if err := p.readStateJSON(WarningFile, MaxSmallFileSize, &w); err != nil {
		return nil, fmt.Errorf("read warning: %w", err)
	}
	return &w, nil
}

// RemoveWarning removes the project's warning.json, for when a session ends
// or its deadline moves; a missing one is not an error. As the lock, it
// stays as the spare of the next warning.
func (p *Project) RemoveWarning() error {
	if err := p.retireState(WarningFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove warning: %w", err)
	}
	return nil
}

// ensureProject opens project with the caller's own rights and makes its
// .sessiond ready (see ProjectDir), for the path-based functions.
func ensureProject(project string) (*Project, error) {
	p, err := OpenProject(project, nil)
	if err == nil {
		err = p.EnsureStateDir()
	}
	return p, err
}

// WriteLock writes project's lock file with the caller's own rights; see
// Project.WriteLock.
func WriteLock(project string, l *Lock) error {
	p, err := ensureProject(project)
	if err != nil {
		return fmt.Errorf("write lock: %w", err)
	}
	return p.WriteLock(l)
}

// CreateLock creates project's lock file with the caller's own rights if
// there is none; see Project.CreateLock.
func CreateLock(project string, l *Lock) error {
	p, err := ensureProject(project)
	if err != nil {
		return fmt.Errorf("create lock: %w", err)
	}
	return p.CreateLock(l)
}

// ReadLock reads project's lock file with the caller's own rights; see
// Project.ReadLock.
func ReadLock(project string) (*Lock, error) {
	p, err := OpenProject(project, nil)
	if err != nil {
		return nil, fmt.Errorf("read lock: %w", err)
	}
	return p.ReadLock()
}

// RemoveLock removes project's lock file with the caller's own rights; a
// missing one is not an error.
func RemoveLock(project string) error {
	p, err := OpenProject(project, nil)
	if err != nil {
		return fmt.Errorf("remove lock: %w", err)
	}
	return p.RemoveLock()
}

// WriteWarning writes project's warning.json with the caller's own rights;
// see Project.WriteWarning.
func WriteWarning(project string, w *Warning) error {
	p, err := ensureProject(project)
	if err != nil {
		return fmt.Errorf("write warning: %w", err)
	}
	return p.WriteWarning(w)
}

// RemoveWarning removes project's warning.json with the caller's own
// rights; a missing one is not an error.
func RemoveWarning(project string) error {
	p, err := OpenProject(project, nil)
	if err != nil {
		return fmt.Errorf("remove warning: %w", err)
	}
	return p.RemoveWarning()
}
