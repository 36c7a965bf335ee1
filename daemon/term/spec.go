package term

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/sessiond/sessiond/daemon/identity"
	"github.com/sessiond/sessiond/ipc"
)

// Spec is what a holder runs and where it keeps its files. The daemon hands
// it to the holder through a pipe, never through a file, because Env holds
// the session's secrets.
type Spec struct {
	// Argv is the command; Argv[0] is looked up in the PATH of Env.
	Argv []string `json:"argv"`
	// Dir is the command's working directory.
	Dir string `json:"dir"`
	// Env is the command's whole environment. TERM defaults to
	// xterm-256color when it is missing, and Home, if set, replaces HOME.
	Env []string `json:"env"`
	// Home is the user's home directory for HOME.
	Home string `json:"home,omitempty"`
	// Credential runs the command as another user (a root daemon running a
	// user's session).
	Credential *Credential `json:"credential,omitempty"`
	// SessionDir holds the holder's socket, its pid file and the exit file.
	SessionDir string `json:"session_dir"`
	// LogPath is the session log the terminal output is appended to.
	LogPath string `json:"log_path"`
	// LogMaxSize caps the log in bytes (0: no cap). At the cap the log is
	// renamed to LogPath.1 (older ones shift up to LogPath.LogKeep) and a
	// new one is started.
	LogMaxSize int64 `json:"log_max_size,omitempty"`
	// LogKeep is how many rotated logs are kept (0: none, the full log is
	// dropped at the cap).
	LogKeep int `json:"log_keep,omitempty"`
	// Size is the initial window size (0x0 means 80x24; larger than
	// ipc.MaxTermCols by ipc.MaxTermRows is clamped).
	Size ipc.TermSize `json:"size,omitzero"`
	// Scrollback is how many lines scrolled off the top are kept as text
	// (0 means DefaultScrollback).
	Scrollback int `json:"scrollback,omitempty"`
	// Cgroup, when set, is the session's cgroup: the command is born in
	// its command leaf (the holder itself stays out of it).
	Cgroup *ipc.Cgroup `json:"cgroup,omitempty"`
}

// Credential is a user to run the command as (identity.User; the holder
// is told its ids and groups).
type Credential = identity.User

// Defaults and limits of a Spec.
const (
	DefaultCols       = 80
	DefaultRows       = 24
	DefaultScrollback = 1000
	MaxScrollback     = 100000
	MaxLogKeep        = 100
	// maxSpecSize bounds the spec read from the pipe (the environment is
	// most of it).
	maxSpecSize = 8 << 20
)

// File names in the session directory.
const (
	SocketName = "term.sock"
	InfoName   = "holder.json"
	ExitName   = "exit.json"
	// ScreenName is the screen as the command left it, with the end of the
	// scrollback, written just before the exit status.
	ScreenName = "screen.json"
	// DiagName is the holder's own diagnostics (start, end, failures; never
	// the child's output or environment).
	DiagName = "holder.log"
)

// ErrSpec is matched by errors.Is for every invalid Spec.
var ErrSpec = errors.New("invalid terminal spec")

// withDefaults returns the spec with its zero values filled in.
func (s Spec) withDefaults() Spec {
	if s.Size == (ipc.TermSize{}) {
		s.Size = ipc.TermSize{Cols: DefaultCols, Rows: DefaultRows}
	}
	if size, err := ipc.CheckTermSize(s.Size.Cols, s.Size.Rows); err == nil {
		s.Size = size // clamped
	}
	if s.Scrollback == 0 {
		s.Scrollback = DefaultScrollback
	}
	return s
}

// Check reports the first problem of the spec, naming the field.
func (s Spec) Check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrSpec, fmt.Sprintf(format, a...))
	}
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return bad("argv is empty")
	}
	for _, p := range []struct{ name, path string }{{"dir", s.Dir}, {"session_dir", s.SessionDir}, {"log_path", s.LogPath}} {
		if p.path == "" {
			return bad("%s is empty", p.name)
		}
		if !filepath.IsAbs(p.path) {
			return bad("%s %q is not an absolute path", p.name, p.path)
		}
	}
	if s.Home != "" && !filepath.IsAbs(s.Home) {
		return bad("home %q is not an absolute path", s.Home)
	}
	if err := s.Credential.Validate(); err != nil {
		return bad("credential: %v", err)
	}
	for i, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			// The value may be a secret: name the entry, never print it.
			return bad("env entry %d is not KEY=VALUE", i)
		}
	}
	if err := ipc.CheckSocketPath(filepath.Join(s.SessionDir, SocketName)); err != nil {
		return bad("session_dir: %v", err)
	}
	if s.LogMaxSize < 0 {
		return bad("log_max_size %d is negative", s.LogMaxSize)
	}
	if s.LogKeep < 0 || s.LogKeep > MaxLogKeep {
		return bad("log_keep %d is outside 0..%d", s.LogKeep, MaxLogKeep)
	}
	if s.Size != (ipc.TermSize{}) {
		if _, err := ipc.CheckTermSize(s.Size.Cols, s.Size.Rows); err != nil {
			return bad("size: %v", err)
		}
	}
	if s.Scrollback < 0 || s.Scrollback > MaxScrollback {
		return bad("scrollback %d is outside 0..%d", s.Scrollback, MaxScrollback)
	}
	return nil
}

// ReadSpec decodes and checks a spec from r (the holder's stdin).
func ReadSpec(r io.Reader) (Spec, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSpecSize+1))
	if err != nil {
		return Spec{}, fmt.Errorf("read terminal spec: %w", err)
	}
	if len(data) > maxSpecSize {
		return Spec{}, fmt.Errorf("%w: larger than %d bytes", ErrSpec, maxSpecSize)
	}
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if dec.More() {
		return Spec{}, fmt.Errorf("%w: data after the JSON object", ErrSpec)
	}
	if err := s.Check(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// childEnv is the environment the command gets: Env with HOME replaced by
// Home when set and TERM added when missing.
func (s Spec) childEnv() []string {
	env := make([]string, 0, len(s.Env)+2)
	hasTerm := false
	for _, kv := range s.Env {
		if s.Home != "" && strings.HasPrefix(kv, "HOME=") {
			continue
		}
		hasTerm = hasTerm || strings.HasPrefix(kv, "TERM=")
		env = append(env, kv)
	}
	if s.Home != "" {
		env = append(env, "HOME="+s.Home)
	}
	if !hasTerm {
		env = append(env, "TERM=xterm-256color")
	}
	return env
}
