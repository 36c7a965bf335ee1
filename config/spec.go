package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Restart policies.
const (
	RestartNo        = "no"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// Checkpoint modes.
const (
	CheckpointRef    = "ref"
	CheckpointCommit = "commit"
)

// Spec says what a session runs and how it is supervised.
type Spec struct {
	Command           []string          `toml:"command" json:"command,omitempty"`
	Env               map[string]string `toml:"env" json:"-"`
	Timeout           Duration          `toml:"timeout" json:"timeout"`
	WarnBefore        Duration          `toml:"warn_before" json:"warn_before"`
	WarnSignal        Signal            `toml:"warn_signal" json:"warn_signal,omitempty"`
	WarnSignalForce   bool              `toml:"warn_signal_force" json:"warn_signal_force,omitempty"`
	OnWarning         string            `toml:"on_warning" json:"on_warning,omitempty"`
	StopSignal        Signal            `toml:"stop_signal" json:"stop_signal"`
	StopGrace         Duration          `toml:"stop_grace" json:"stop_grace"`
	IdleTimeout       Duration          `toml:"idle_timeout" json:"idle_timeout,omitempty"`
	Checkpoint        string            `toml:"checkpoint" json:"checkpoint"`
	CheckpointMode    string            `toml:"checkpoint_mode" json:"checkpoint_mode"`
	CheckpointMaxFile Size              `toml:"checkpoint_max_file" json:"checkpoint_max_file"`
	Restart           string            `toml:"restart" json:"restart"`
	MaxRestarts       int               `toml:"max_restarts" json:"max_restarts"`
	RestartWindow     Duration          `toml:"restart_window" json:"restart_window"`
	Preflight         []string          `toml:"preflight" json:"preflight,omitempty"`
	FeatureList       string            `toml:"feature_list" json:"feature_list,omitempty"`
	ProgressFile      string            `toml:"progress_file" json:"progress_file,omitempty"`
	Concurrent        bool              `toml:"concurrent" json:"concurrent,omitempty"`
	Watch             Watch             `toml:"watch" json:"watch"`
	Services          []Service         `toml:"service" json:"services,omitempty"`
	// TTY runs the command on a terminal (sessionctl attach, screen,
	// send); nil means the default: a terminal for a recognised agent
	// command that runs interactively (see TerminalWanted).
	TTY *bool `toml:"tty" json:"tty,omitempty"`
	// DetachKey ends sessionctl attach ("ctrl-]" when empty).
	DetachKey string `toml:"detach_key" json:"detach_key,omitempty"`
}

// Watch configures the project watcher.
type Watch struct {
	// Ignore holds gitignore patterns ignored in addition to .git, .sessiond
	// and the project's .gitignore files.
	Ignore []string `toml:"ignore" json:"ignore,omitempty"`
}

// Service is a sidecar started before the session's command and stopped
// after it, such as a dev server.
type Service struct {
	Name         string   `toml:"name" json:"name"`
	Command      []string `toml:"command" json:"command"`
	Ready        string   `toml:"ready" json:"ready,omitempty"`
	ReadyTimeout Duration `toml:"ready_timeout" json:"ready_timeout,omitempty"`
}

// Clone returns a deep copy of s, so that overriding the copy never changes s.
func (s Spec) Clone() Spec {
	c := s
	c.Command = append([]string(nil), s.Command...)
	c.Preflight = append([]string(nil), s.Preflight...)
	c.Watch.Ignore = append([]string(nil), s.Watch.Ignore...)
	c.Services = append([]Service(nil), s.Services...)
	if s.TTY != nil {
		tty := *s.TTY
		c.TTY = &tty
	}
	c.Env = make(map[string]string, len(s.Env))
	for k, v := range s.Env {
		c.Env[k] = v
	}
	return c
}

// Validate reports the first thing wrong with s as a *FieldError naming the
// key. The checkpoint schedule's syntax is checked by package configfile,
// which holds the cron parser (configfile.CheckSpec does both).
func (s *Spec) Validate() error {
	for i, a := range s.Command {
		if strings.ContainsRune(a, 0) {
			return &FieldError{"command", fmt.Sprintf("argument %d contains a NUL byte", i)}
		}
	}
	if len(s.Command) > 0 && s.Command[0] == "" {
		return &FieldError{"command", "the program name is empty"}
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return &FieldError{"env", fmt.Sprintf("invalid variable name %q", k)}
		}
	}
	if s.Timeout.Duration <= 0 {
		return &FieldError{"timeout", fmt.Sprintf("must be positive, got %s", s.Timeout)}
	}
	if s.WarnBefore.Duration < 0 {
		return &FieldError{"warn_before", fmt.Sprintf("must not be negative, got %s", s.WarnBefore)}
	}
	if s.WarnBefore.Duration >= s.Timeout.Duration {
		return &FieldError{"warn_before", fmt.Sprintf("%s is not shorter than timeout %s: the warning would come at or before the start", s.WarnBefore, s.Timeout)}
	}
	if s.StopSignal.Num == 0 {
		return &FieldError{"stop_signal", "must be set (e.g. SIGTERM)"}
	}
	if s.StopGrace.Duration < 0 {
		return &FieldError{"stop_grace", fmt.Sprintf("must not be negative, got %s", s.StopGrace)}
	}
	if s.IdleTimeout.Duration < 0 {
		return &FieldError{"idle_timeout", fmt.Sprintf("must not be negative, got %s", s.IdleTimeout)}
	}
	switch s.CheckpointMode {
	case CheckpointRef, CheckpointCommit:
	default:
		return &FieldError{"checkpoint_mode", fmt.Sprintf("%q is not one of ref, commit", s.CheckpointMode)}
	}
	if s.CheckpointMaxFile < 0 {
		return &FieldError{"checkpoint_max_file", "must not be negative"}
	}
	switch s.Restart {
	case RestartNo, RestartOnFailure, RestartAlways:
	default:
		return &FieldError{"restart", fmt.Sprintf("%q is not one of no, on-failure, always", s.Restart)}
	}
	if s.MaxRestarts < 0 {
		return &FieldError{"max_restarts", fmt.Sprintf("must not be negative, got %d", s.MaxRestarts)}
	}
	if s.RestartWindow.Duration <= 0 {
		return &FieldError{"restart_window", fmt.Sprintf("must be positive, got %s", s.RestartWindow)}
	}
	for _, f := range []struct{ key, v string }{{"feature_list", s.FeatureList}, {"progress_file", s.ProgressFile}} {
		if err := projectPath(f.key, f.v); err != nil {
			return err
		}
	}
	for key, v := range map[string]string{"on_warning": s.OnWarning} {
		if strings.ContainsRune(v, 0) {
			return &FieldError{key, "contains a NUL byte"}
		}
	}
	for i, c := range s.Preflight {
		if strings.ContainsRune(c, 0) {
			return &FieldError{fmt.Sprintf("preflight[%d]", i), "contains a NUL byte"}
		}
	}
	if err := s.validateTerminal(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, sv := range s.Services {
		key := fmt.Sprintf("service[%d]", i)
		if sv.Name == "" {
			return &FieldError{key + ".name", "is required"}
		}
		if seen[sv.Name] {
			return &FieldError{key + ".name", fmt.Sprintf("%q is used twice", sv.Name)}
		}
		seen[sv.Name] = true
		if len(sv.Command) == 0 || sv.Command[0] == "" {
			return &FieldError{key + ".command", "is required"}
		}
		if sv.ReadyTimeout.Duration < 0 {
			return &FieldError{key + ".ready_timeout", "must not be negative"}
		}
	}
	return nil
}

// projectPath checks a key naming a file of the project without touching
// the disk: a relative path that stays inside the project ("..", an
// absolute path or a NUL is refused). Symlinks are checked when the file is
// opened, inside the project, with its user's rights.
func projectPath(key, v string) error {
	switch {
	case v == "":
		return nil
	case strings.ContainsRune(v, 0):
		return &FieldError{key, "contains a NUL byte"}
	case filepath.IsAbs(v):
		return &FieldError{key, fmt.Sprintf("%q: must be a path relative to the project, not an absolute one", v)}
	case !filepath.IsLocal(v):
		return &FieldError{key, fmt.Sprintf("%q: must stay inside the project (\"..\" leaves it)", v)}
	}
	return nil
}

// Deadline returns the session's deadline and warning time for a start at t.
func (s *Spec) Deadline(t time.Time) (deadline, warnAt time.Time) {
	deadline = t.Add(s.Timeout.Duration)
	return deadline, deadline.Add(-s.WarnBefore.Duration)
}
