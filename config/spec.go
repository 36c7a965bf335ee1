package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"
)

// Restart policies.
const (
	RestartNo        = "no"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// Resume policies: whether a session continues the agent's conversation of
// the session before it.
const (
	ResumeNever     = "never"
	ResumeOnRestart = "on-restart"
	ResumeAlways    = "always"
)

// Agent settings besides the adapters' own names (claude-code, codex,
// generic): auto recognises the agent from the command, none runs it
// untouched.
const (
	AgentAuto = "auto"
	AgentNone = "none"
)

// CheckpointOnTurn, in checkpoint_on, takes a checkpoint at the end of each
// of the agent's turns.
const CheckpointOnTurn = "turn"

// Checkpoint modes.
const (
	CheckpointRef    = "ref"
	CheckpointCommit = "commit"
)

// Spec says what a session runs and how it is supervised.
type Spec struct {
	Command []string          `toml:"command" json:"command,omitempty"`
	Env     map[string]string `toml:"env" json:"-"`
	// InheritEnv false runs sessions with a clean environment instead of
	// the environment of whoever started them (nil: true).
	InheritEnv *bool    `toml:"inherit_env" json:"inherit_env,omitempty"`
	Timeout    Duration `toml:"timeout" json:"timeout"`
	WarnBefore Duration `toml:"warn_before" json:"warn_before"`
	// WarnBeforeAuto says that nobody gave warn_before (a file, a flag):
	// Validate then sets it to DefaultWarnBefore, or a quarter of a shorter
	// timeout (FitWarnBefore).
	WarnBeforeAuto  bool   `toml:"-" json:"warn_before_auto,omitempty"`
	WarnSignal      Signal `toml:"warn_signal" json:"warn_signal,omitempty"`
	WarnSignalForce bool   `toml:"warn_signal_force" json:"warn_signal_force,omitempty"`
	OnWarning       string `toml:"on_warning" json:"on_warning,omitempty"`
	StopSignal      Signal `toml:"stop_signal" json:"stop_signal"`
	// StopSignalAuto says that nobody gave stop_signal: SIGTERM, or SIGHUP
	// for a command on a terminal (StopOnTerminal), as when a person
	// closes it.
	StopSignalAuto    bool     `toml:"-" json:"stop_signal_auto,omitempty"`
	StopGrace         Duration `toml:"stop_grace" json:"stop_grace"`
	IdleTimeout       Duration `toml:"idle_timeout" json:"idle_timeout,omitempty"`
	Checkpoint        string   `toml:"checkpoint" json:"checkpoint"`
	CheckpointMode    string   `toml:"checkpoint_mode" json:"checkpoint_mode"`
	CheckpointMaxFile Size     `toml:"checkpoint_max_file" json:"checkpoint_max_file"`
	Restart           string   `toml:"restart" json:"restart"`
	MaxRestarts       int      `toml:"max_restarts" json:"max_restarts"`
	RestartWindow     Duration `toml:"restart_window" json:"restart_window"`
	Preflight         []string `toml:"preflight" json:"preflight,omitempty"`
	FeatureList       string   `toml:"feature_list" json:"feature_list,omitempty"`
	ProgressFile      string   `toml:"progress_file" json:"progress_file,omitempty"`
	Concurrent        bool     `toml:"concurrent" json:"concurrent,omitempty"`
	// Agent is the coding agent the command runs: auto (recognised from
	// the executable), none (run untouched), or an adapter's name.
	Agent string `toml:"agent" json:"agent,omitempty"`
	// Resume is never, on-restart (a restart after an error, a crash or a
	// timeout continues the conversation) or always.
	Resume string `toml:"resume" json:"resume,omitempty"`
	// WaitingTimeout ends a session whose agent has waited for input this
	// long (warned first, like every deadline); zero is off.
	WaitingTimeout Duration `toml:"waiting_timeout" json:"waiting_timeout,omitempty"`
	// MaxTokens and MaxCostUSD cap the agent's model use (zero: no cap);
	// BudgetWarn is the fraction of a cap at which the warning comes.
	MaxTokens  int64   `toml:"max_tokens" json:"max_tokens,omitempty"`
	MaxCostUSD float64 `toml:"max_cost_usd" json:"max_cost_usd,omitempty"`
	BudgetWarn float64 `toml:"budget_warn" json:"budget_warn,omitempty"`
	// AgentMayExtend is how much in all the agent may move its deadline
	// through its MCP tools; zero: not at all.
	AgentMayExtend Duration `toml:"agent_may_extend" json:"agent_may_extend,omitempty"`
	// CheckpointOn lists events that take a checkpoint besides the
	// schedule: "turn", the end of each of the agent's turns.
	CheckpointOn []string  `toml:"checkpoint_on" json:"checkpoint_on,omitempty"`
	Watch        Watch     `toml:"watch" json:"watch"`
	Services     []Service `toml:"service" json:"services,omitempty"`
	// Worktree, WorktreeDir, WorktreeSetup and PortRange run the session
	// in a git worktree of its own (config/worktree.go).
	Worktree      WorktreeOption `toml:"worktree" json:"worktree,omitzero"`
	WorktreeDir   string         `toml:"worktree_dir" json:"worktree_dir,omitempty"`
	WorktreeSetup SetupCommands  `toml:"worktree_setup" json:"worktree_setup,omitempty"`
	PortRange     PortRange      `toml:"port_range" json:"port_range,omitzero"`
	// TTY runs the command on a terminal (sessionctl attach, screen,
	// send); nil means the default: a terminal for a recognised agent
	// command that runs interactively (see TerminalWanted).
	TTY *bool `toml:"tty" json:"tty,omitempty"`
	// DetachKey ends sessionctl attach ("ctrl-]" when empty).
	DetachKey string `toml:"detach_key" json:"detach_key,omitempty"`
	// Limits bound what the session may take (config/limits.go).
	Limits
	// Queueing is how the session goes through usage limits, stalls,
	// pools and reboots (config/queue.go).
	Queueing
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
	c.WorktreeSetup = s.WorktreeSetup.Clone()
	c.CheckpointOn = append([]string(nil), s.CheckpointOn...)
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
	if s.WarnBeforeAuto {
		s.WarnBefore = Duration{FitWarnBefore(s.Timeout.Duration)}
	}
	if s.StopSignalAuto && s.StopSignal.Num == 0 {
		s.StopSignal = Signal{unix.SIGTERM, "SIGTERM"}
	}
	for i, a := range s.Command {
		if strings.ContainsRune(a, 0) {
			return &FieldError{"command", fmt.Sprintf("argument %d contains a NUL byte", i)}
		}
	}
	if len(s.Command) > 0 && s.Command[0] == "" {
		return &FieldError{"command", "the program name is empty"}
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsFunc(k, unicode.IsControl) {
			return &FieldError{"env", fmt.Sprintf("invalid variable name %q (no =, and no control character)", k)}
		}
	}
	if s.Timeout.Duration <= 0 {
		return &FieldError{"timeout", fmt.Sprintf("must be positive, got %s", s.Timeout)}
	}
	if s.WarnBefore.Duration < 0 {
		return &FieldError{"warn_before", fmt.Sprintf("must not be negative, got %s", s.WarnBefore)}
	}
	if s.WarnBefore.Duration >= s.Timeout.Duration {
		return &FieldError{"warn_before", fmt.Sprintf("%s is not shorter than timeout %s: the warning would come at or before the start; give a shorter warn_before (sessionctl start --warn-before), or leave it unset for a quarter of the timeout", s.WarnBefore, s.Timeout)}
	}
	if s.StopSignal.Num == 0 {
		return &FieldError{"stop_signal", "must be set (e.g. SIGTERM)"}
	}
	if err := CheckWarnSignal(s.WarnSignal); err != nil {
		return &FieldError{"warn_signal", err.Error()}
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
	if err := s.validateAgent(); err != nil {
		return err
	}
	if err := s.Limits.Validate(); err != nil {
		return err
	}
	if err := s.Queueing.Validate(); err != nil {
		return err
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
	return s.validateWorktree()
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

// validateAgent checks the agent keys. The adapters' names are the agent
// package's: a name it does not know is refused when a session starts.
func (s *Spec) validateAgent() error {
	for _, r := range s.Agent {
		if !(r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return &FieldError{"agent", fmt.Sprintf("%q is not an agent name (auto, none, claude-code, codex, generic)", s.Agent)}
		}
	}
	switch s.Resume {
	case "", ResumeNever, ResumeOnRestart, ResumeAlways:
	default:
		return &FieldError{"resume", fmt.Sprintf("%q is not one of never, on-restart, always", s.Resume)}
	}
	if s.WaitingTimeout.Duration < 0 {
		return &FieldError{"waiting_timeout", fmt.Sprintf("must not be negative, got %s", s.WaitingTimeout)}
	}
	if s.MaxTokens < 0 {
		return &FieldError{"max_tokens", fmt.Sprintf("must not be negative, got %d", s.MaxTokens)}
	}
	if s.MaxCostUSD < 0 || s.MaxCostUSD != s.MaxCostUSD {
		return &FieldError{"max_cost_usd", fmt.Sprintf("must be a non-negative number, got %v", s.MaxCostUSD)}
	}
	if s.BudgetWarn < 0 || s.BudgetWarn > 1 || s.BudgetWarn != s.BudgetWarn {
		return &FieldError{"budget_warn", fmt.Sprintf("must be a fraction of the budget between 0 and 1 (0.8 is 80%%), got %v", s.BudgetWarn)}
	}
	if s.AgentMayExtend.Duration < 0 {
		return &FieldError{"agent_may_extend", fmt.Sprintf("must not be negative, got %s", s.AgentMayExtend)}
	}
	for i, e := range s.CheckpointOn {
		if e != CheckpointOnTurn {
			return &FieldError{fmt.Sprintf("checkpoint_on[%d]", i), fmt.Sprintf("%q is not an event checkpoints are taken on (turn)", e)}
		}
	}
	return nil
}

// InheritsEnv reports whether sessions of s run with the environment of
// whoever started them (inherit_env, true unless set false).
func (s Spec) InheritsEnv() bool { return s.InheritEnv == nil || *s.InheritEnv }

// DefaultWarnBefore is how long before the deadline the warning comes when
// nobody says (warn_before unset), for a timeout of 2h or more.
const DefaultWarnBefore = 30 * time.Minute

// FitWarnBefore is warn_before left unset for a timeout: DefaultWarnBefore,
// or a quarter of a timeout too short for it (2m30s of a 10m one, 2.5s of 10s),
// so that no timeout is refused for want of room for its warning.
func FitWarnBefore(timeout time.Duration) time.Duration {
	return min(DefaultWarnBefore, (timeout / 4).Truncate(time.Millisecond))
}

// StopOnTerminal settles the stop signal of a spec that runs on a
// terminal: SIGHUP, the terminal going away, unless one was given. An
// interactive shell or agent ignores SIGTERM and would wait out the grace.
func (s *Spec) StopOnTerminal() {
	if s.StopSignalAuto && s.OnTerminal() {
		s.StopSignal = Signal{unix.SIGHUP, "SIGHUP"}
	}
}
