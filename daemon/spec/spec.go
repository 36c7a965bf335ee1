// Package spec resolves the spec a session runs under: the daemon's
// defaults, under the project's sessiond.toml (read with its user's
// rights), under the request's overrides, checked as a whole; and the
// project's [[notify]] rules from the same file.
package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/daemon/agent"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Resolve merges defaults, the project's sessiond.toml (read with its
// user's rights) and the request's overrides, and checks the result.
func Resolve(defaults config.Spec, p *state.Project, req ipc.StartRequest) (config.Spec, error) {
	dir := p.Dir()
	spec, err := Project(p, defaults.Clone())
	if err != nil {
		return spec, ipc.BadRequest("%w", err)
	}
	if len(req.Command) > 0 {
		spec.Command = req.Command
	}
	for k, v := range req.Env {
		spec.Env[k] = v
	}
	if req.InheritEnv != nil {
		spec.InheritEnv = req.InheritEnv
	}
	durations := []struct {
		key, v   string
		dst      *config.Duration
		positive bool
	}{
		{"timeout", req.Timeout, &spec.Timeout, true},
		{"warn_before", req.WarnBefore, &spec.WarnBefore, false},
		{"stop_grace", req.StopGrace, &spec.StopGrace, false},
		{"idle_timeout", req.IdleTimeout, &spec.IdleTimeout, true},
		{"waiting_timeout", req.WaitingTimeout, &spec.WaitingTimeout, true},
		{"stall_timeout", req.StallTimeout, &spec.StallTimeout, true},
	}
	for _, f := range durations {
		if f.v == "" {
			continue
		}
		x, err := config.ParseDuration(f.v)
		if err == nil && f.positive && x.Duration <= 0 {
			err = fmt.Errorf("want a positive duration, got %q", f.v)
		}
		if err != nil {
			return spec, ipc.BadRequest("%s: %w", f.key, err)
		}
		*f.dst = x
	}
	if req.WarnBefore != "" {
		spec.WarnBeforeAuto = false
	}
	if req.StopSignal != "" {
		spec.StopSignalAuto = false
	}
	signals := []struct {
		key, v string
		dst    *config.Signal
	}{
		{"warn_signal", req.WarnSignal, &spec.WarnSignal},
		{"stop_signal", req.StopSignal, &spec.StopSignal},
	}
	for _, f := range signals {
		if f.v == "" {
			continue
		}
		x, err := config.ParseSignal(f.v)
		if err != nil {
			return spec, ipc.BadRequest("%s: %w", f.key, err)
		}
		*f.dst = x
	}
	if req.Restart != "" {
		spec.Restart = req.Restart
	}
	if req.WarnSignalForce {
		spec.WarnSignalForce = true
	}
	if req.OnWarning != "" {
		spec.OnWarning = req.OnWarning
	}
	if req.Checkpoint != nil {
		spec.Checkpoint = *req.Checkpoint
	}
	if req.TTY != nil {
		tty := *req.TTY
		spec.TTY = &tty
	}
	if req.Agent != "" {
		spec.Agent = req.Agent
	}
	switch {
	case req.MaxTokens < 0:
		return spec, ipc.BadRequest("max_tokens: want 0 (none) or more, got %d", req.MaxTokens)
	case req.MaxCostUSD < 0 || math.IsNaN(req.MaxCostUSD) || math.IsInf(req.MaxCostUSD, 0):
		return spec, ipc.BadRequest("max_cost_usd: want 0 (none) or more, got %v", req.MaxCostUSD)
	}
	if req.MaxTokens > 0 {
		spec.MaxTokens = req.MaxTokens
	}
	if req.MaxCostUSD > 0 {
		spec.MaxCostUSD = req.MaxCostUSD
	}
	if spec.Limits, err = req.LimitsOver(spec.Limits); err != nil {
		return spec, ipc.BadRequest("%w", err)
	}
	if req.Pool != "" {
		spec.Pool = req.Pool
	}
	if req.Priority != nil {
		spec.Priority = *req.Priority
	}
	if req.OnLimit != "" {
		spec.OnLimit = req.OnLimit
	}
	spec.HardDeadline = req.HardDeadline
	if err := configfile.CheckSpec(&spec); err != nil {
		return spec, ipc.BadRequest("%w", err)
	}
	if len(spec.Command) == 0 {
		return spec, ipc.BadRequest("no command: give one after -- (sessionctl start DIR -- CMD ARGS) or set [session] command in %s", filepath.Join(dir, config.ProjectFile))
	}
	// A name no adapter has is refused here, before the start makes a
	// record of it.
	if _, err := agent.Detect(spec.Agent, spec.Command); err != nil {
		return spec, ipc.BadRequest("agent: %w", err)
	}
	resolveTerminal(&spec)
	spec.StopOnTerminal()
	return spec, nil
}

// Project is the project's sessiond.toml over base; a project without one
// has base.
func Project(p *state.Project, base config.Spec) (config.Spec, error) {
	data, err := p.ReadConfig()
	if errors.Is(err, fs.ErrNotExist) {
		return base, nil
	}
	if err != nil {
		return base, err
	}
	return configfile.ParseProject(filepath.Join(p.Dir(), config.ProjectFile), data, base)
}

// resolveTerminal settles, at a start, whether the command runs on a
// terminal: as the spec's tty says when it is set, else on one when the
// command is an agent that a person talks to there (claude without -p,
// codex without exec), whose interface needs a terminal to run at all —
// even with agent = "none", which leaves out only the integration.
func resolveTerminal(spec *config.Spec) {
	setting := spec.Agent
	if setting == agent.SettingNone {
		setting = agent.SettingAuto
	}
	interactive := false
	if a, err := agent.Detect(setting, spec.Command); err == nil {
		interactive = a.Interactive(spec.Command)
	}
	if spec.TerminalWanted(interactive) {
		tty := true
		spec.TTY = &tty
	}
}

// NotifyRules reads the [[notify]] rules of p's sessiond.toml with its
// user's rights; a project without the file has none.
func NotifyRules(p *state.Project) ([]config.NotifyRule, error) {
	data, err := p.ReadConfig()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return configfile.ParseProjectNotify(filepath.Join(p.Dir(), config.ProjectFile), data)
}

// BaseEnv is the environment a session's processes inherit before
// sessiond's own variables: its base (see Environ), then the spec's env.
func BaseEnv(s config.Spec, caller []string) []string {
	env := Environ(caller, s.InheritsEnv())
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+s.Env[k])
	}
	return env
}

// Environ is the environment a session starts from: the environment of
// whoever started it (caller), as a command typed in a shell would get,
// less sessiond's own variables and the shell's bookkeeping; with inherit
// false, or without a caller, a clean one — except that a daemon running
// as an ordinary user gives a session with no caller its own environment,
// which is that user's. A root daemon never gives anyone its own.
func Environ(caller []string, inherit bool) []string {
	switch {
	case inherit && caller != nil:
		out := make([]string, 0, len(caller))
		for _, kv := range caller {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" || strings.HasPrefix(k, "SESSIOND_") || shellOwn[k] {
				continue
			}
			out = append(out, kv)
		}
		return out
	case inherit && os.Geteuid() != 0:
		return os.Environ()
	}
	return CleanEnv()
}

// The PATH of a clean environment: root's has the sbins.
const (
	cleanPath     = "/usr/local/bin:/usr/bin:/bin"
	rootCleanPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// CleanPathFor puts in env the PATH of a clean environment for uid where
// it has root's (a root daemon made the clean environment of a session of
// another user): the sbins are root's alone.
func CleanPathFor(env []string, uid int) []string {
	if uid == 0 {
		return env
	}
	for i, kv := range env {
		if kv == "PATH="+rootCleanPath {
			env[i] = "PATH=" + cleanPath
		}
	}
	return env
}

// shellOwn are the variables a shell keeps for itself, which a session
// started elsewhere must not take over.
var shellOwn = map[string]bool{"_": true, "PWD": true, "OLDPWD": true, "SHLVL": true}

// CleanEnv is a clean environment: a standard PATH, and the daemon's
// locale, time zone and (for a daemon run as an ordinary user) its user's
// HOME, USER, LOGNAME and SHELL. A root daemon adds the session's user's
// own identity after it.
func CleanEnv() []string {
	path := cleanPath
	if os.Geteuid() == 0 {
		path = rootCleanPath
	}
	env := []string{"PATH=" + path}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "LANG" || k == "TZ" || strings.HasPrefix(k, "LC_"):
			env = append(env, kv)
		case os.Geteuid() != 0 && (k == "HOME" || k == "USER" || k == "LOGNAME" || k == "SHELL"):
			env = append(env, kv)
		}
	}
	return env
}
