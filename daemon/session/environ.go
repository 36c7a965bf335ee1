package session

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/state"
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
	if s.environ == nil {
		return nil
	}
	var b bytes.Buffer
	for _, kv := range s.environ {
		b.WriteString(kv)
		b.WriteByte(0)
	}
	path := filepath.Join(s.dir, EnvironFile)
	if err := state.WriteFile(path, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("keep the session's environment: %w", err)
	}
	if s.uid != os.Geteuid() {
		if err := os.Lchown(path, s.uid, -1); err != nil {
			return fmt.Errorf("keep the session's environment: %w", err)
		}
	}
	return nil
}

// readEnviron reads an EnvironFile; a missing one is no environment.
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
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	env := []string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			env = append(env, kv)
		}
	}
	return env, nil
}
