package session

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.uber.org/zap"
)

// EnvironFile is the file in a session's directory that keeps the
// environment it was started with (the caller's, DESIGN §5.4), for what
// starts it again after the daemon itself restarted: its restart policy,
// sessionctl restart. Mode 0600, owned by the session's user; its values
// appear nowhere else on disk.
const EnvironFile = "environ"

// maxEnviron bounds the environment kept for a session (Linux's own bound
// on an exec's arguments and environment is about as large).
const maxEnviron = 2 << 20

// Environ is the environment the session was started with, before the
// spec's env and sessiond's own variables: nil for none (a clean one, or
// the daemon's own for a user daemon). A session loaded from an earlier
// daemon's record reads it from its directory, once.
func (s *Session) Environ() []string {
	s.environOnce.Do(func() {
		if !s.loaded {
			return
		}
		env, err := readEnviron(filepath.Join(s.dir, EnvironFile))
		if err != nil {
			s.logger().Warn("the environment the session was started with is lost: it runs again with a clean one", zap.Error(err))
			return
		}
		s.environ = env
	})
	return s.environ
}

// saveEnviron keeps the session's environment in its directory, only
// readable by its user; a session without one keeps nothing.
func (s *Session) saveEnviron() error {
	if s.environ == nil || s.environSaved {
		return nil
	}
	s.environSaved = true
	var b bytes.Buffer
	for _, kv := range s.environ {
		b.WriteString(kv)
		b.WriteByte(0)
	}
	// A file of a new session's directory (made with it, empty, when the
	// directory was a spare), not synced: a start pays no sync for it, and
	// a machine that crashes ends the session anyway (an entry cut short
	// is dropped when it is read). An empty file is written as it is, not
	// opened with O_TRUNC: on ext4 a truncation to nothing makes the
	// file's close write it back at once (auto_da_alloc), some 40-50 µs of
	// the start's path.
	f, err := os.OpenFile(filepath.Join(s.dir, EnvironFile), os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("keep the session's environment: %w", err)
	}
	if fi, serr := f.Stat(); serr != nil {
		err = serr
	} else if fi.Size() > 0 {
		err = f.Truncate(0)
	}
	if s.uid != os.Geteuid() && err == nil {
		err = f.Chown(s.uid, -1)
	}
	if err == nil {
		_, err = f.Write(b.Bytes())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keep the session's environment: %w", err)
	}
	return nil
}

// readEnviron reads an EnvironFile; a missing or empty one (made with the
// session's directory, state.SpareDirs, and never written) is no
// environment.
func readEnviron(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxEnviron {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, maxEnviron)
	}
	if fi.Size() == 0 {
		return nil, nil
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	env := []string{}
	text, _ := strings.CutSuffix(string(data), "\x00")
	if !strings.HasSuffix(string(data), "\x00") {
		// The last entry was cut short (a crash as it was written).
		if i := strings.LastIndexByte(text, 0); i >= 0 {
			text = text[:i]
		} else {
			text = ""
		}
	}
	for _, kv := range strings.Split(text, "\x00") {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			env = append(env, kv)
		}
	}
	return env, nil
}
