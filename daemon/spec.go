package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/ipc"
)

// resolveSpec merges the daemon defaults, the project's sessiond.toml and
// the request's overrides, and checks the result.
func (d *Daemon) resolveSpec(dir string, req ipc.StartRequest) (config.Spec, error) {
	spec, err := configfile.LoadProject(filepath.Join(dir, config.ProjectFile), d.cfg.Defaults.Clone())
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
	if err := configfile.CheckSpec(&spec); err != nil {
		return spec, ipc.BadRequest("%w", err)
	}
	if len(spec.Command) == 0 {
		return spec, ipc.BadRequest("no command: give one after -- (sessionctl start DIR -- CMD ARGS) or set [session] command in %s", filepath.Join(dir, config.ProjectFile))
	}
	return spec, nil
}

// projectDir resolves and checks a session's directory.
func projectDir(dir string) (string, error) {
	if dir == "" {
		return "", ipc.BadRequest("no project directory given")
	}
	if !filepath.IsAbs(dir) {
		return "", ipc.BadRequest("project directory %q is not an absolute path", dir)
	}
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", ipc.BadRequest("project directory %s does not exist", dir)
		}
		return "", ipc.BadRequest("project directory %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", ipc.BadRequest("project directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", ipc.BadRequest("%s is not a directory", dir)
	}
	return abs, nil
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
