package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// resolveSpec merges the daemon defaults, the project's sessiond.toml and
// the request's overrides.
func (d *Daemon) resolveSpec(dir string, req ipc.StartRequest) (config.Spec, error) {
	spec, err := config.LoadProject(filepath.Join(dir, config.ProjectFile), d.cfg.Defaults.Clone())
	if err != nil {
		return spec, ipc.BadRequest("%v", err)
	}
	set := func(key, v string, f func(string) error) error {
		if v == "" {
			return nil
		}
		if err := f(v); err != nil {
			return ipc.BadRequest("%s: %v", key, err)
		}
		return nil
	}
	dur := func(dst *config.Duration) func(string) error {
		return func(v string) error {
			x, err := config.ParseDuration(v)
			if err == nil && x.Duration <= 0 {
				err = fmt.Errorf("want a positive duration, got %q", v)
			}
			*dst = x
			return err
		}
	}
	sig := func(dst *config.Signal) func(string) error {
		return func(v string) error {
			x, err := config.ParseSignal(v)
			*dst = x
			return err
		}
	}
	if len(req.Command) > 0 {
		spec.Command = req.Command
	}
	for k, v := range req.Env {
		spec.Env[k] = v
	}
	for _, e := range []error{
		set("timeout", req.Timeout, dur(&spec.Timeout)),
		set("warn_before", req.WarnBefore, func(v string) error {
			x, err := config.ParseDuration(v)
			spec.WarnBefore = x
			return err
		}),
		set("warn_signal", req.WarnSignal, sig(&spec.WarnSignal)),
		set("stop_signal", req.StopSignal, sig(&spec.StopSignal)),
		set("stop_grace", req.StopGrace, func(v string) error {
			x, err := config.ParseDuration(v)
			spec.StopGrace = x
			return err
		}),
		set("idle_timeout", req.IdleTimeout, dur(&spec.IdleTimeout)),
		set("restart", req.Restart, func(v string) error { spec.Restart = v; return nil }),
	} {
		if e != nil {
			return spec, e
		}
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
	if err := spec.Validate(); err != nil {
		return spec, ipc.BadRequest("%v", err)
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
		return "", ipc.BadRequest("project directory %s: %v", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", ipc.BadRequest("project directory %s: %v", dir, err)
	}
	if !fi.IsDir() {
		return "", ipc.BadRequest("%s is not a directory", dir)
	}
	return abs, nil
}

// StartSession starts a session for the caller.
func (d *Daemon) StartSession(ctx context.Context, c ipc.Caller, req ipc.StartRequest) (*ipc.StartResponse, error) {
	if d.closing.Load() {
		return nil, ipc.Unavailable("sessiond is shutting down")
	}
	dir, err := projectDir(req.Dir)
	if err != nil {
		return nil, err
	}
	if err := d.canUseDir(c, dir); err != nil {
		return nil, err
	}
	spec, err := d.resolveSpec(dir, req)
	if err != nil {
		return nil, err
	}
	s, resp, err := d.launch(c.UID, dir, spec, req.Name, "", 0, sortedKeys(req.Env), nil)
	if err != nil {
		return nil, err
	}
	resp.Session = s.snapshot()
	return resp, nil
}

// canUseDir refuses a directory the caller could not enter themselves when
// the daemon runs as root for someone else.
func (d *Daemon) canUseDir(c ipc.Caller, dir string) error {
	if c.Root() || c.UID == os.Geteuid() {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return ipc.BadRequest("%v", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != c.UID {
		return ipc.Forbidden("%s belongs to uid %d, not to you (uid %d)", dir, st.Uid, c.UID)
	}
	return nil
}

// launch creates, registers and spawns a session.
func (d *Daemon) launch(uid int, dir string, spec config.Spec, name, restartOf string, restarts int, envKeys []string, restartTimes []time.Time) (*session, *ipc.StartResponse, error) {
	if _, err := proc.LookPath(spec.Command[0], dir, d.childEnvBase(spec)); err != nil {
		return nil, nil, ipc.BadRequest("%v", err)
	}
	// The checks and the registration are one step; the rest of the start
	// runs unlocked, the registered "starting" session holding the project.
	d.startMu.Lock()
	if !spec.Concurrent {
		if live := d.reg.liveInProject(dir); len(live) > 0 {
			d.startMu.Unlock()
			return nil, nil, ipc.Conflict("project %s already has a live session (%s); stop it first, or set concurrent = true in its sessiond.toml", dir, live[0].id)
		}
	}
	if max := d.cfg.MaxSessions; max > 0 && d.liveCount() >= max {
		d.startMu.Unlock()
		return nil, nil, ipc.Conflict("max_sessions (%d) live sessions already run", max)
	}
	id := d.reg.newID()
	now := time.Now()
	s := &session{
		d: d, id: id, uid: uid, projectDir: dir, startedAt: now, spec: spec,
		dir:    filepath.Join(d.cfg.StateDir, "sessions", id),
		cmds:   make(chan command, 4),
		done:   make(chan struct{}),
		output: make(chan struct{}),

		restartTimes: restartTimes,
	}
	s.log = d.log.With(zap.String("session", id))
	deadline, warnAt := spec.Deadline(now)
	if name == "" {
		name = filepath.Base(dir)
	}
	s.rec = ipc.Session{
		ID: id, Name: name, ProjectDir: dir, ProjectID: state.ProjectID(dir),
		Command: spec.Command, State: ipc.StateStarting, StartedAt: now,
		Deadline: deadline, WarnAt: warnAt, Restarts: restarts, RestartOf: restartOf,
		FilesChanged: []string{}, LogPath: s.logPath(), UID: uid, BootID: d.bootID,
		EnvKeys: envKeys, Spec: &spec,
	}
	resp := &ipc.StartResponse{}
	// Registered, but written to disk only once running (or failed): a
	// crash in between leaves no child behind to account for.
	d.reg.add(s)
	d.startMu.Unlock()
	if err := state.EnsureDir(s.dir); err != nil {
		err = fmt.Errorf("create session directory: %w", err)
		s.fail(err)
		return nil, nil, err
	}
	if err := d.prepare(s, resp); err != nil {
		s.fail(err)
		return nil, nil, err
	}
	out, err := os.OpenFile(s.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		s.fail(err)
		return nil, nil, fmt.Errorf("open session log: %w", err)
	}
	if uid != os.Geteuid() {
		_ = out.Chown(uid, -1)
	}
	if err := s.preflight(out); err != nil {
		out.Close()
		s.fail(err)
		return nil, nil, err
	}
	if err := s.startSidecars(); err != nil {
		out.Close()
		s.fail(err)
		return nil, nil, err
	}
	s.startWatch()
	child, err := proc.Spawn(proc.Spec{
		Argv: spec.Command, Dir: dir, Env: s.env(), Output: out, Credential: s.credential(),
	})
	out.Close()
	if err != nil {
		err = ipc.BadRequest("%v", err)
		s.stopSidecars()
		s.stopWatch()
		s.fail(err)
		return nil, nil, err
	}
	s.child = child
	d.watchOutput(s)
	s.update(func(r *ipc.Session) {
		r.State = ipc.StateRunning
		r.PID = child.PID
		r.StartTime = child.StartTime
	})
	s.log.Info("session started", zap.Strings("command", spec.Command), zap.String("dir", dir), zap.Int("pid", child.PID))
	s.emit(ipc.EventStarted, fmt.Sprintf("started %s in %s", strings.Join(spec.Command, " "), dir), s.snapshot())
	d.wg.Add(1)
	go s.run()
	return s, resp, nil
}

// fail records a session that could not start.
func (s *session) fail(err error) {
	now := time.Now()
	s.update(func(r *ipc.Session) {
		r.State = ipc.StateFailed
		r.EndedAt = &now
		r.Error = err.Error()
	})
	close(s.done)
	s.emit(ipc.EventFailed, err.Error(), nil)
	s.log.Info("session failed to start", zap.Error(err))
	s.d.sessionEnded(s)
}

func (d *Daemon) liveCount() int {
	n := 0
	for _, s := range d.reg.all() {
		if ipc.Live(s.snapshot().State) {
			n++
		}
	}
	return n
}

// childEnvBase is the environment a child inherits before sessiond's own
// variables: the daemon's, then the spec's env.
func (d *Daemon) childEnvBase(spec config.Spec) []string {
	env := os.Environ()
	for _, k := range sortedKeys(spec.Env) {
		env = append(env, k+"="+spec.Env[k])
	}
	return env
}

// env is the child's full environment (DESIGN §5.4).
func (s *session) env() []string {
	rec := s.snapshot()
	env := s.d.childEnvBase(s.spec)
	if cred := s.credential(); cred != nil {
		if u, err := user.LookupId(strconv.Itoa(int(cred.Uid))); err == nil {
			env = append(env, "HOME="+u.HomeDir, "USER="+u.Username, "LOGNAME="+u.Username)
		}
	}
	pdir := filepath.Join(s.projectDir, state.DirName)
	env = append(env,
		"SESSIOND_SESSION_ID="+s.id,
		"SESSIOND_PROJECT_DIR="+s.projectDir,
		"SESSIOND_DEADLINE="+rec.Deadline.Format(time.RFC3339),
		"SESSIOND_WARN_AT="+rec.WarnAt.Format(time.RFC3339),
		"SESSIOND_SOCKET="+s.d.cfg.Socket,
		"SESSIOND_CONTEXT_FILE="+filepath.Join(pdir, "context.md"),
		"SESSIOND_STATE_FILE="+filepath.Join(pdir, "session_state.json"),
	)
	if s.prevHandoff != "" {
		env = append(env, "SESSIOND_HANDOFF_FILE="+s.prevHandoff)
	}
	return dedupeEnv(env)
}

// credential returns the credential to run the session as its owner when
// the daemon runs as root for another user, else nil.
func (s *session) credential() *syscall.Credential {
	if os.Geteuid() != 0 || s.uid == 0 {
		return nil
	}
	cred := &syscall.Credential{Uid: uint32(s.uid), Gid: uint32(s.uid)}
	if u, err := user.LookupId(strconv.Itoa(s.uid)); err == nil {
		if gid, err := strconv.Atoi(u.Gid); err == nil {
			cred.Gid = uint32(gid)
		}
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.Atoi(g); err == nil {
					cred.Groups = append(cred.Groups, uint32(n))
				}
			}
		}
	}
	return cred
}

// dedupeEnv keeps the last value of each variable.
func dedupeEnv(env []string) []string {
	seen := map[string]int{}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := seen[k]; ok {
			out[i] = kv
			continue
		}
		seen[k] = len(out)
		out = append(out, kv)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// preflightTimeout bounds each preflight command.
const preflightTimeout = 5 * time.Minute

// preflight runs the spec's preflight commands in the project, with the
// session's environment and output going to its log; the first failure
// fails the start.
func (s *session) preflight(out *os.File) error {
	for _, c := range s.spec.Preflight {
		ctx, cancel := context.WithTimeout(context.Background(), preflightTimeout)
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c)
		cmd.Dir = s.projectDir
		cmd.Env = s.env()
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.credential()}
		cmd.Cancel = func() error { return proc.SignalGroup(cmd.Process.Pid, syscall.SIGKILL) }
		fmt.Fprintf(out, "sessiond: preflight: %s\n", c)
		err := proc.Run(cmd)
		cancel()
		if err != nil {
			return ipc.BadRequest("preflight %q failed: %v (its output is in sessionctl logs %s)", c, err, s.id)
		}
	}
	return nil
}
