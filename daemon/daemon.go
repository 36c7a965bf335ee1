package daemon

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/events"
	"github.com/sessiond/sessiond/daemon/later"
	"github.com/sessiond/sessiond/daemon/logkeep"
	"github.com/sessiond/sessiond/daemon/logs"
	"github.com/sessiond/sessiond/daemon/memory"
	"github.com/sessiond/sessiond/daemon/metrics"
	"github.com/sessiond/sessiond/daemon/notify"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/projects"
	"github.com/sessiond/sessiond/daemon/registry"
	"github.com/sessiond/sessiond/daemon/schedule"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/sessions"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/daemon/watch"
	"github.com/sessiond/sessiond/daemon/worktree"
	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/ipc/server"
)

// Options configure a Daemon.
type Options struct {
	Config  *config.Config
	Log     *zap.Logger
	Version string
	// Ready is called once the socket answers (the service manager's
	// readiness notification).
	Ready func()
	// Clock is the daemon's clock; nil is the system clock.
	Clock session.Clock
	// Executable is the sessiond binary, which runs the log keeper
	// (`sessiond logkeeper`); empty leaves plain sessions writing their
	// logs themselves.
	Executable string
}

// Daemon is the composition root: the services, wired to each other and
// to the API server, and their ordered shutdown.
type Daemon struct {
	cfg *config.Config
	// dirLock is the daemon's hold on its state dir, for its whole life.
	dirLock *state.DirLock
	log     *zap.Logger
	version string
	ready   func()
	clock   session.Clock
	since   time.Time
	exe     string

	reg     *registry.Registry
	pending *session.PendingEnds
	// cgroups is what the host offers to contain sessions.
	cgroups   *cgroup.Host
	bus       *events.Bus
	watcher   *logs.Watcher
	logs      *logs.Service
	hub       *watch.Hub
	ckpt      *checkpoint.Checkpointer
	cron      *schedule.Scheduler
	later     *later.Queue
	settle    *memory.Settler
	notes     *notify.Service
	worktrees *worktree.Service
	sessions  *sessions.Service
	projects  *projects.Service
	// metrics are nil unless metrics = true; metricsServer is the TCP
	// listener of metrics_listen.
	metrics       *metrics.Metrics
	metricsServer *server.MetricsServer
	// webServer is the web listener ([web] listen), nil when off.
	webServer *http.Server

	closing atomic.Bool
	spares  *state.SpareDirs
}

// spareSessionDirs are the session directories kept made ahead of need
// (state.SpareDirs): enough for a burst of starts from a script, few
// enough to cost nothing.
const spareSessionDirs = 4

// New prepares a daemon: the state dir and the services sessions share.
func New(opt Options) (*Daemon, error) {
	cfg, log := opt.Config, opt.Log
	for _, dir := range []string{cfg.StateDir, filepath.Join(cfg.StateDir, "sessions")} {
		if err := state.EnsureDir(dir); err != nil {
			return nil, fmt.Errorf("state dir %s: %w", cfg.StateDir, err)
		}
	}
	// Before anything in the state dir is touched: one daemon a state dir.
	dirLock, err := state.LockDir(cfg.StateDir, cfg.Socket)
	if err != nil {
		return nil, err
	}
	// Temp files of atomic writes a crash interrupted.
	if removed, err := state.RemoveStaleTemps(cfg.StateDir, 2); err != nil {
		log.Warn("remove stale temp files", zap.Error(err))
	} else if len(removed) > 0 {
		log.Info("removed stale temp files of interrupted writes", zap.Strings("files", removed))
	}
	clock := opt.Clock
	if clock == nil {
		clock = session.RealClock{}
	}
	d := &Daemon{cfg: cfg, log: log, version: opt.Version, dirLock: dirLock, ready: opt.Ready, clock: clock, since: clock.Now(), exe: opt.Executable,
		reg: registry.New(), bus: events.New(clock.Now), settle: memory.NewSettler(clock)}
	d.ckpt = checkpoint.New(checkpoint.Options{
		StateDir: cfg.StateDir, MaxFileSize: int64(cfg.Defaults.CheckpointMaxFile),
		Keep: cfg.CheckpointKeep, MaxAge: cfg.CheckpointMaxAge.Duration, LeaveOut: checkpoint.DefaultLeaveOut,
		FullEvery: cfg.CheckpointFullEvery, FullAfter: cfg.CheckpointFullAfter.Duration,
		Log: log.Named("checkpoint"),
	})
	d.cron = schedule.New(log.Named("cron"))
	d.later = later.New(later.Quiet)
	d.spares = state.NewSpareDirs(filepath.Join(cfg.StateDir, "sessions"), spareSessionDirs,
		func(err error) { log.Warn("make spare session directories", zap.Error(err)) }, sessions.SessionFiles()...)
	if d.watcher, err = logs.NewWatcher(log.Named("output"), int64(cfg.LogMaxSize), cfg.LogKeep); err != nil {
		d.close()
		return nil, err
	}
	if d.hub, err = watch.NewHub(log.Named("watch")); err != nil {
		d.close()
		return nil, fmt.Errorf("start project watcher: %w", err)
	}
	d.hub.NameTemp(cgroup.NameFor(cfg.StateDir) + "-watch")
	d.pending = session.NewPendingEnds(cfg.StateDir)
	d.cgroups = cgroup.Detect(cgroup.Options{Name: cgroup.NameFor(cfg.StateDir), Off: !cfg.CgroupsOn()})
	if c := d.cgroups.Info(); c.Mode == cgroup.None {
		log.Warn("sessions are not contained in cgroups of their own: their stop reaches what stays in their process group and what the /proc sweep finds; limits cannot be applied",
			zap.String("why", c.Why), zap.String("fix", c.Fix))
	} else {
		log.Info("sessions are contained in cgroups", zap.String("mode", c.Mode), zap.String("path", c.Path), zap.Any("controllers", c.Controllers))
	}
	deps := &session.Deps{
		Clock: clock, Log: log, StateDir: cfg.StateDir, Socket: cfg.Socket, BootID: proc.BootID(), LeaveOut: checkpoint.DefaultLeaveOut,
		Sessionctl: sessions.FindSessionctl(),
		Events:     d.bus, Records: &sessions.RecordWriter{StateDir: cfg.StateDir, Spares: d.spares}, Watches: d.hub, Checkpoints: d.ckpt,
		Schedule: d.cron, Output: d.watcher,
		Terminal: session.TerminalDeps{LogMaxSize: int64(cfg.LogMaxSize), LogKeep: cfg.LogKeep},
		Pending:  d.pending, Cgroups: d.cgroups, Later: d.later,
	}
	if cfg.Metrics {
		d.enableMetrics(deps)
	}
	d.worktrees = worktree.NewService(cfg.StateDir, d.reg, d.ckpt, d.cgroups, log.Named("worktree"))
	notes := &lateSubjects{}
	if d.notes, err = notify.NewService(cfg, notes, log); err != nil {
		d.close()
		return nil, err
	}
	d.sessions = sessions.New(sessions.Options{Config: cfg, Log: log, Registry: d.reg, Deps: deps,
		Worktrees: d.worktrees, Notifications: d.notes, Events: d.bus, Relax: memory.Relax})
	notes.Sessions = d.sessions
	d.logs = logs.NewService(d.reg, d.watcher, cfg.LogKeep, log.Named("logs"))
	d.projects = projects.New(d.reg, d.sessions, d.ckpt, cfg.Defaults, clock, log.Named("projects"))
	d.bus.Observe(d.notes.Observe)
	if d.metrics != nil {
		d.bus.Observe(d.metrics.Observe)
	}
	d.bus.Observe(func(ev ipc.Event) {
		if ev.Type == ipc.EventStarted || ev.Type == ipc.EventEnded {
			d.settle.Count(1)
		}
	})
	return d, nil
}

// ForgetEnvirons removes the environments the sessions of stateDir were
// started with (their environ files), for a state dir no later daemon
// restarts them from: sessiond exec's, in the project.
func ForgetEnvirons(stateDir string) error {
	return state.RemoveInSessions(stateDir, session.EnvironFile)
}

// KeeperSocket is the log keeper's socket in the state dir.
func KeeperSocket(stateDir string) string { return filepath.Join(stateDir, "logkeeper.sock") }

// connectKeeper takes over the log keeper an earlier daemon left, if one
// runs; a new one starts with the first plain session.
func (d *Daemon) connectKeeper() {
	if d.exe == "" || !logkeep.Supported || !d.cfg.LogKeeperOn() {
		return
	}
	// The keeper's socket and log are made by path: only in a state dir
	// that no one but the daemon's user can change (sessiond exec's may
	// be in a user's project).
	if err := state.PrivateDir(d.cfg.StateDir); err != nil {
		d.log.Warn("no log keeper: the state dir is not the daemon's alone; plain sessions write their logs themselves", zap.Error(err))
		return
	}
	sock := KeeperSocket(d.cfg.StateDir)
	if len(sock) >= maxSocketPath {
		d.log.Warn("no log keeper: its socket's path is too long; plain sessions write their logs themselves", zap.String("socket", sock))
		return
	}
	k, err := logkeep.Connect(logkeep.Options{Socket: sock, Executable: d.exe,
		Diag: filepath.Join(d.cfg.StateDir, "logkeeper.log"), Logger: d.log.Named("logkeeper")})
	if err != nil {
		d.log.Warn("no log keeper; plain sessions write their logs themselves", zap.Error(err))
		return
	}
	d.watcher.UseKeeper(k)
}

// maxSocketPath is the most a Unix socket's path may hold (sun_path).
const maxSocketPath = 108

// lateSubjects is the notifications' view of the sessions, which are made
// after the notifications they publish to.
type lateSubjects struct{ notify.Sessions }

// Sessions is the sessions API, for sessiond exec's one session.
func (d *Daemon) Sessions() *sessions.Service { return d.sessions }

// Logs is the logs API, for sessiond exec's one session.
func (d *Daemon) Logs() *logs.Service { return d.logs }

// Run serves the API on the configured socket until ctx ends, then shuts
// down: sessions stopped (or left, per on_shutdown), handoffs written. A
// signal on hurry (e.g. a second SIGTERM) cuts stop grace periods short
// without losing any session's end.
func (d *Daemon) Run(ctx context.Context, hurry <-chan struct{}) error {
	proc.CloseOnExec()
	if err := proc.EnableSubreaper(); err != nil {
		d.log.Warn("cannot become a child subreaper; escaped descendants go to init", zap.Error(err))
	}
	perm := fs.FileMode(0o600)
	if len(d.cfg.AllowedGroups) > 0 {
		perm = 0o660
	}
	l, err := server.Listen(d.cfg.Socket, perm)
	if err != nil {
		d.close()
		return err
	}
	access, err := d.accessFunc()
	if err == nil {
		err = d.shareSocket()
	}
	if err == nil {
		err = d.listenMetrics()
	}
	if err != nil {
		l.Close()
		d.close()
		return err
	}
	// Before the sessions are adopted: the keeper hands their logs'
	// rotation back first.
	d.connectKeeper()
	d.sessions.Recover()
	// After recovery, which reads the directory they are made in.
	d.spares.Start()
	go d.sessions.WatchMemory(ctx)
	d.worktrees.Recover()
	// Root and the daemon's own user (whose agents' hooks may all call at
	// once) are bounded only by the total.
	srv := server.New(ipc.Services{
		Sessions: d.sessions, Logs: d.logs, Terminals: d.sessions, Projects: d.projects, Events: d.bus,
		System: system{d}, Notifications: d.notes, Worktrees: d.worktrees, Queue: d.sessions,
	}, access, d.log, server.Options{Limits: server.Limits{
		Total: d.cfg.MaxConnections, PerUID: d.cfg.MaxConnectionsPerUser, Trusted: []int{0, os.Geteuid()}},
		Metrics: d.metricsHandler(), Observe: d.requestObserver()})
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(l) }()
	if err := d.listenWeb(srv); err != nil {
		d.log.Error("web listener", zap.Error(err))
		d.shutdown(srv, hurry)
		return err
	}
	d.log.Info("sessiond ready", zap.String("socket", d.cfg.Socket), zap.String("state_dir", d.cfg.StateDir), zap.String("version", d.version))
	if d.ready != nil {
		d.ready()
	}
	d.settle.Soon()
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		d.log.Error("API server stopped", zap.Error(err))
	}
	d.shutdown(srv, hurry)
	return err
}

// shutdownMargin is added to the longest stop grace of the live sessions
// to bound the whole shutdown: kills, final checkpoints and handoffs.
const shutdownMargin = time.Minute

// shutdown runs the ordered steps under one deadline: refuse new sessions,
// subscriptions and restarts, end or leave the live ones, close the
// streams and the socket, release the shared services.
func (d *Daemon) shutdown(srv *server.Server, hurry <-chan struct{}) {
	d.closing.Store(true)
	d.bus.Refuse()
	ctx, cancel := context.WithTimeout(context.Background(), d.sessions.MaxGrace()+shutdownMargin)
	defer cancel()
	leave := d.cfg.OnShutdown == config.ShutdownLeave
	d.log.Info("shutting down", zap.String("on_shutdown", d.cfg.OnShutdown), zap.Int("live", len(d.reg.Live(""))))
	steps := []struct {
		name string
		run  func(context.Context)
	}{
		{"cancel restarts", d.sessions.Close},
		{"end sessions", func(ctx context.Context) { d.sessions.EndAll(ctx, leave, hurry) }},
		{"sync the records whose sync waits", func(context.Context) {
			// The running records of the last starts, for the sessions
			// left running: the next daemon writes over their spares.
			if err := state.SyncDeferred(); err != nil {
				d.log.Error("sync the last records", zap.Error(err))
			}
		}},
		{"send the last notifications", d.notes.Close},
		{"close event streams", func(context.Context) { d.bus.Close() }},
		{"stop the API server", func(ctx context.Context) {
			sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
			defer scancel()
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
		}},
		{"stop the metrics listener", d.stopMetrics},
		{"stop the web listener", d.stopWeb},
		{"release watchers and the scheduler", func(context.Context) { d.close() }},
	}
	for _, step := range steps {
		step.run(ctx)
		if ctx.Err() != nil {
			d.log.Error("shutdown deadline passed", zap.String("step", step.name))
		}
	}
	d.log.Info("sessiond stopped")
}

// close releases the shared services (a New that failed half way, or the
// end of a shutdown).
func (d *Daemon) close() {
	if d.settle != nil {
		d.settle.Stop()
	}
	// First: its tidying removes ended sessions' cgroups, before the
	// daemon's own.
	if d.later != nil {
		d.later.Close()
	}
	if d.spares != nil {
		d.spares.Close()
	}
	if d.cgroups != nil {
		d.cgroups.Close()
	}
	if d.cron != nil {
		d.cron.Stop()
	}
	if d.hub != nil {
		_ = d.hub.Close()
	}
	if d.watcher != nil {
		d.watcher.Close()
	}
	// Last: the next daemon may take the state dir from here on.
	d.dirLock.Release()
}

func ptr[T any](v T) *T { return &v }

// system is the daemon's own information (ipc.System).
type system struct{ d *Daemon }

// Version implements ipc.System.
func (s system) Version(context.Context) ipc.Version {
	mode := "user"
	if os.Geteuid() == 0 {
		mode = "system"
	}
	return ipc.Version{Version: s.d.version, API: ipc.APIVersion, PID: os.Getpid(), Socket: s.d.cfg.Socket, Mode: mode, StateDir: s.d.cfg.StateDir, Containment: ptr(s.d.cgroups.Info())}
}

// Health implements ipc.System: the sessions counted are those c may see
// (a user of a root daemon learns nothing of others').
func (s system) Health(_ context.Context, c ipc.Caller) ipc.Health {
	n, live := 0, 0
	for _, sess := range s.d.reg.All() {
		if !registry.Visible(c, sess) {
			continue
		}
		n++
		if ipc.Live(sess.State()) {
			live++
		}
	}
	return ipc.Health{Status: "ok", Warning: s.Warning(), Sessions: n, Live: live, Since: s.d.since}
}

// Warning implements ipc.System: the ends that cannot be written yet.
func (s system) Warning() string { return s.d.pending.Warning() }
