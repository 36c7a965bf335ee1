package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
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

// WriteLock writes the project's lock file atomically (mode 0600), replacing
// any earlier one: use it to update the lock of a session that holds it.
func WriteLock(project string, l *Lock) error {
	if l == nil {
		return errors.New("write lock: nil lock")
	}
	if _, err := ProjectDir(project); err != nil {
		return fmt.Errorf("write lock: %w", err)
	}
	if err := WriteJSON(LockPath(project), l); err != nil {
		return fmt.Errorf("write lock: %w", err)
	}
	return nil
}

// CreateLock writes the project's lock file only if there is none, in one
// atomic step (the complete file is linked into place). If a lock exists the
// error wraps fs.ErrExist; the caller reads it with ReadLock to decide
// whether its session is still alive.
func CreateLock(project string, l *Lock) error {
	if l == nil {
		return errors.New("create lock: nil lock")
	}
	if _, err := ProjectDir(project); err != nil {
		return fmt.Errorf("create lock: %w", err)
	}
	data, err := marshalJSON(l)
	if err != nil {
		return fmt.Errorf("create lock: %w", err)
	}
	path := LockPath(project)
	// Write the whole file under a temporary name, then link it: link fails
	// if the lock exists, and readers never see a partial lock.
	f, err := os.CreateTemp(filepath.Dir(path), "."+LockFile+".tmp-*")
	if err != nil {
		return fmt.Errorf("create lock %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err = f.Write(data); err == nil {
		err = fsyncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create lock %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return fmt.Errorf("create lock %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("create lock %s: %w", path, err)
	}
	return nil
}

// ReadLock reads the project's lock file. A missing lock gives an error
// wrapping fs.ErrNotExist; a corrupt one is moved aside and gives a
// *CorruptError, which still means a session ended uncleanly.
func ReadLock(project string) (*Lock, error) {
	var l Lock
	if err := ReadJSON(LockPath(project), &l); err != nil {
		return nil, fmt.Errorf("read lock: %w", err)
	}
	return &l, nil
}

// RemoveLock removes the project's lock file; a missing one is not an error.
func RemoveLock(project string) error {
	if err := removeFile(LockPath(project)); err != nil {
		return fmt.Errorf("remove lock: %w", err)
	}
	return nil
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
func WriteWarning(project string, w *Warning) error {
	if w == nil {
		return errors.New("write warning: nil warning")
	}
	if _, err := ProjectDir(project); err != nil {
		return fmt.Errorf("write warning: %w", err)
	}
	w.TimeLeftSeconds = max(0, int64(w.Deadline.Sub(w.WarnedAt).Round(time.Second)/time.Second))
	if err := WriteJSON(WarningPath(project), w); err != nil {
		return fmt.Errorf("write warning: %w", err)
	}
	return nil
}

// RemoveWarning removes the project's warning.json, for when a session ends
// or its deadline moves; a missing one is not an error.
func RemoveWarning(project string) error {
	if err := removeFile(WarningPath(project)); err != nil {
		return fmt.Errorf("remove warning: %w", err)
	}
	return nil
}
