package session

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.uber.org/zap"
)

// EnvironFile is the file in a session's directory that keeps the
// environment it was started with (the caller's, DESIGN §5.4), and the
// values given with --env, for what starts it again after the daemon
// itself restarted: a queued session, its restart policy, sessionctl
// restart. Mode 0600, owned by the session's user; its values appear
// nowhere else on disk. The caller's entries come first; an empty entry,
// then the --env values, follow when there are any.
const EnvironFile = "environ"

// maxEnviron bounds the environment kept for a session (Linux's own bound
// on an exec's arguments and environment is about as large).
const maxEnviron = 2 << 20

// Environ is the environment the session was started with, before the
// spec's env and sessiond's own variables: nil for none (a clean one, or
// the daemon's own for a user daemon). A session loaded from an earlier
// daemon's record reads it from its directory, once.
func (s *Session) Environ() []string {
	s.loadEnviron()
	return s.environ
}

// loadEnviron reads, once, what a session loaded from an earlier daemon's
// record kept in its directory: the caller's environment, and the values
// given with --env, which go back into its spec.
func (s *Session) loadEnviron() {
	s.environOnce.Do(func() {
		if !s.loaded {
			return
		}
		env, given, err := readEnviron(filepath.Join(s.dir, EnvironFile))
		if err != nil {
			s.logger().Warn("the environment the session was started with is lost: it runs again with a clean one", zap.Error(err))
			return
		}
		s.environ = env
		if len(given) == 0 {
			return
		}
		// The project's and the daemon's env were taken again; the values
		// given with --env go over them, as at the start.
		spec := maps.Clone(s.spec.Env)
		if spec == nil {
			spec = map[string]string{}
		}
		for _, k := range s.rec.EnvKeys {
			if v, ok := given[k]; ok {
				spec[k] = v
			}
		}
		s.spec.Env = spec
	})
}

// saveEnviron keeps the session's environment and its --env values in its
// directory, only readable by its user; a session with neither keeps
// nothing.
func (s *Session) saveEnviron() error {
	if (s.environ == nil && len(s.rec.EnvKeys) == 0) || s.environSaved {
		return nil
	}
	s.environSaved = true
	var b bytes.Buffer
	for _, kv := range s.environ {
		b.WriteString(kv)
		b.WriteByte(0)
	}
	if len(s.rec.EnvKeys) > 0 {
		b.WriteByte(0)
		for _, k := range s.rec.EnvKeys {
			if v, ok := s.spec.Env[k]; ok {
				b.WriteString(k + "=" + v)
				b.WriteByte(0)
			}
		}
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

// readEnviron reads an EnvironFile: the caller's environment (nil for
// none: a missing or empty file, made with the session's directory,
// state.SpareDirs, and never written, or one that holds --env values
// alone) and the values given with --env.
func readEnviron(path string) (env []string, given map[string]string, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxEnviron {
		return nil, nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, maxEnviron)
	}
	if fi.Size() == 0 {
		return nil, nil, nil
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	text, _ := strings.CutSuffix(string(data), "\x00")
	if !strings.HasSuffix(string(data), "\x00") {
		// The last entry was cut short (a crash as it was written).
		if i := strings.LastIndexByte(text, 0); i >= 0 {
			text = text[:i]
		} else {
			text = ""
		}
	}
	entries := strings.Split(text, "\x00")
	if entries[0] != "" {
		env = []string{}
	}
	for i, kv := range entries {
		if kv == "" && i < len(entries)-1 {
			// The --env values follow.
			given = map[string]string{}
			for _, kv := range entries[i+1:] {
				if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
					given[k] = v
				}
			}
			break
		}
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			env = append(env, kv)
		}
	}
	return env, given, nil
}
