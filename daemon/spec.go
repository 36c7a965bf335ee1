package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// resolveSpec merges the daemon defaults, the project's sessiond.toml (read
// with its user's rights) and the request's overrides, and checks the
// result.
func (d *Daemon) resolveSpec(p *state.Project, req ipc.StartRequest) (config.Spec, error) {
	dir := p.Dir()
	spec, err := projectSpec(p, d.cfg.Defaults.Clone())
	if err != nil {
		return spec, ipc.BadRequest("%w", err)
	}
	if len(req.Command) > 0 {
		spec.Command = req.Command
	}
	for k, v := range req.Env {
		spec.Env[k] = v
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
	if req.MaxTokens > 0 {
		spec.MaxTokens = req.MaxTokens
	}
	if req.MaxCostUSD > 0 {
		spec.MaxCostUSD = req.MaxCostUSD
	}
	if err := configfile.CheckSpec(&spec); err != nil {
		return spec, ipc.BadRequest("%w", err)
	}
	if len(spec.Command) == 0 {
		return spec, ipc.BadRequest("no command: give one after -- (sessionctl start DIR -- CMD ARGS) or set [session] command in %s", filepath.Join(dir, config.ProjectFile))
	}
	resolveTerminal(&spec)
	return spec, nil
}

// projectSpec is the project's sessiond.toml over base; a project without
// one has base.
func projectSpec(p *state.Project, base config.Spec) (config.Spec, error) {
	data, err := p.ReadConfig()
	if errors.Is(err, fs.ErrNotExist) {
		return base, nil
	}
	if err != nil {
		return base, err
	}
	return configfile.ParseProject(filepath.Join(p.Dir(), config.ProjectFile), data, base)
}

// openProject opens a project directory with the rights of the user uid:
// a directory that user cannot reach is one that "does not exist or is not
// accessible", whichever it is.
func (d *Daemon) openProject(dir string, uid int) (*state.Project, *state.Owner, error) {
	if dir == "" {
		return nil, nil, ipc.BadRequest("no project directory given")
	}
	if !filepath.IsAbs(dir) {
		return nil, nil, ipc.BadRequest("project directory %q is not an absolute path", dir)
	}
	owner, err := ownerFor(uid)
	if err != nil {
		return nil, nil, ipc.Forbidden("%w", err)
	}
	p, err := state.OpenProject(dir, owner)
	if err != nil {
		return nil, nil, ipc.BadRequest("%w", err)
	}
	return p, owner, nil
}

// ownerFor is the identity a session of user uid runs with: nil (the
// daemon's own) unless a root daemon serves another user.
func ownerFor(uid int) (*state.Owner, error) {
	if os.Geteuid() != 0 || uid == os.Geteuid() {
		return nil, nil
	}
	return state.LookupOwner(uid)
}

// canUseDir refuses a directory the caller does not own when the daemon
// runs as root for someone else.
func (d *Daemon) canUseDir(c ipc.Caller, dir string) error {
	if c.Root() || c.UID == os.Geteuid() {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return ipc.BadRequest("%w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != c.UID {
		return ipc.Forbidden("%s belongs to uid %d, not to you (uid %d)", dir, st.Uid, c.UID)
	}
	return nil
}
