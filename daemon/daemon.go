package daemon

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/metrics"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/session"
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
	// Clock is the sessions' clock; nil is the system clock.
	Clock session.Clock
}

// Daemon is the supervisor: the registry of sessions, the services they
// share, crash recovery, restarts, and the API.
type Daemon struct {
	settle  settler
	trim    historyTrimmer
	cfg     *config.Config
	log     *zap.Logger
	version string
	ready   func()
	since   time.Time
	bootID  string

	reg      *registry
	bus      *bus
	out      *outputWatcher
	hub      *watch.Hub
	ckpt     *checkpoint.Checkpointer
	cron     *scheduler
	deps     session.Deps
	restarts *restarter
	usage    *usageMeter
	notes    *notifications
	// metrics are nil unless metrics = true; metricsServer is the TCP
	// listener of metrics_listen.
	metrics       *metrics.Metrics
	metricsServer *server.MetricsServer
	// worktrees are the git worktrees of sessions (worktrees.go).
	worktrees *worktree.Manager

	// startMu serialises the checks of a start (one live session per
	// project, max_sessions) with its registration.
	startMu sync.Mutex
	closing atomic.Bool
}

// New prepares a daemon: the state dir and the services sessions share.
func New(opt Options) (*Daemon, error) {
	cfg := opt.Config
	for _, dir := range []string{cfg.StateDir, filepath.Join(cfg.StateDir, "sessions")} {
		if err := state.EnsureDir(dir); err != nil {
			return nil, fmt.Errorf("state dir %s: %w", cfg.StateDir, err)
		}
	}
	// Temp files of atomic writes a crash interrupted.
	if removed, err := state.RemoveStaleTemps(cfg.StateDir, 2); err != nil {
		opt.Log.Warn("remove stale temp files", zap.Error(err))
	} else if len(removed) > 0 {
		opt.Log.Info("removed stale temp files of interrupted writes", zap.Strings("files", removed))
	}
	clock := opt.Clock
	if clock == nil {
		clock = session.RealClock{}
	}
	d := &Daemon{
		cfg: cfg, log: opt.Log, version: opt.Version, ready: opt.Ready,
		since: time.Now(), bootID: proc.BootID(),
		reg: newRegistry(), bus: newBus(), usage: newUsageMeter(),
		ckpt: checkpoint.New(checkpoint.Options{
			StateDir: cfg.StateDir, MaxFileSize: int64(cfg.Defaults.CheckpointMaxFile),
			Keep: cfg.CheckpointKeep, MaxAge: cfg.CheckpointMaxAge.Duration, LeaveOut: checkpoint.DefaultLeaveOut,
			FullEvery: cfg.CheckpointFullEvery, FullAfter: cfg.CheckpointFullAfter.Duration,
			Log: opt.Log.Named("checkpoint"),
		}),
		cron: newScheduler(opt.Log.Named("cron")),
	}
	d.worktrees = openWorktrees(cfg.StateDir, opt.Log.Named("worktree"))
	var err error
	if d.out, err = newOutputWatcher(d.log.Named("output"), int64(cfg.LogMaxSize), cfg.LogKeep); err != nil {
		d.cron.stop()
		return nil, err
	}
	if d.hub, err = watch.NewHub(d.log.Named("watch")); err != nil {
		d.cron.stop()
		d.out.close()
		return nil, fmt.Errorf("start project watcher: %w", err)
	}
	if d.notes, err = newNotifications(cfg, d.reg, d.log); err != nil {
		d.close()
		return nil, err
	}
	d.bus.tap = d.notes.observe
	d.bus.churn = d.settle.after
	d.restarts = newRestarter(d)
	d.deps = session.Deps{
		Clock: clock, Log: d.log, StateDir: cfg.StateDir, Socket: cfg.Socket, BootID: d.bootID, LeaveOut: checkpoint.DefaultLeaveOut,
		Sessionctl: findSessionctl(),
		Events:     d.bus, Records: recordWriter{cfg.StateDir}, Watches: d.hub, Checkpoints: d.ckpt,
		Schedule: d.cron, Output: d.out, Live: d.reg.isLive, OnEnd: d.sessionEnded,
		Terminal: session.TerminalDeps{LogMaxSize: int64(cfg.LogMaxSize), LogKeep: cfg.LogKeep},
	}
	if cfg.Metrics {
		d.enableMetrics()
	}
	return d, nil
}

// Run serves the API on the configured socket until ctx ends, then shuts
// down: sessions stopped (or left, per on_shutdown), handoffs written. A
// signal on hurry (e.g. a second SIGTERM) cuts stop grace periods short
// without losing any session's end.
func (d *Daemon) Run(ctx context.Context, hurry <-chan struct{}) error {
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
	d.recover()
	d.recoverWorktrees()
	// Root and the daemon's own user (whose agents' hooks may all call at
	// once) are bounded only by the total.
	srv := server.New(d, access, d.log, server.Options{Limits: server.Limits{
		Total: d.cfg.MaxConnections, PerUID: d.cfg.MaxConnectionsPerUser, Trusted: []int{0, os.Geteuid()}},
		Metrics: d.metricsHandler(), Observe: d.requestObserver()})
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(l) }()
	d.log.Info("sessiond ready", zap.String("socket", d.cfg.Socket), zap.String("state_dir", d.cfg.StateDir), zap.String("version", d.version))
	if d.ready != nil {
		d.ready()
	}
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

// shutdown runs the ordered steps under one deadline: refuse new sessions
// and restarts, end or leave the live ones, close the streams and the
// socket, release the shared services.
func (d *Daemon) shutdown(srv *server.Server, hurry <-chan struct{}) {
	d.closing.Store(true)
	live := d.reg.live("")
	grace := time.Duration(0)
	for _, s := range live {
		grace = max(grace, s.Spec().StopGrace.Duration)
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace+shutdownMargin)
	defer cancel()
	d.log.Info("shutting down", zap.String("on_shutdown", d.cfg.OnShutdown), zap.Int("live", len(live)))
	steps := []struct {
		name string
		run  func(context.Context)
	}{
		{"cancel restarts", func(ctx context.Context) { d.restarts.cancelAll(ctx) }},
		{"end sessions", func(ctx context.Context) { d.endSessions(ctx, live, hurry) }},
		{"send the last notifications", func(ctx context.Context) { d.notes.close(ctx) }},
		{"close event streams", func(context.Context) { d.bus.closeAll() }},
		{"stop the API server", func(ctx context.Context) {
			sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
			defer scancel()
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
		}},
		{"stop the metrics listener", d.stopMetrics},
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

func (d *Daemon) close() {
	d.cron.stop()
	_ = d.hub.Close()
	d.out.close()
}

// endSessions stops (or, with on_shutdown = "leave", leaves) every live
// session and waits until each one's goroutine is done: with stop, every
// end is on disk. A signal on hurry cuts the remaining grace periods.
func (d *Daemon) endSessions(ctx context.Context, live []*session.Session, hurry <-chan struct{}) {
	leave := d.cfg.OnShutdown == config.ShutdownLeave
	for _, s := range live {
		go func() {
			if leave {
				_ = s.Leave(ctx)
				return
			}
			_ = s.Stop(ctx, session.Interrupted, -1)
		}()
	}
	for _, s := range live {
		select {
		case <-s.Exited():
			continue
		case <-hurry:
			d.log.Warn("second signal: killing sessions now; their handoffs are still written")
			for _, s := range live {
				go func() { _ = s.Stop(ctx, session.Interrupted, 0) }()
			}
			hurry = nil
		case <-ctx.Done():
			return
		}
		select {
		case <-s.Exited():
		case <-ctx.Done():
			return
		}
	}
}

// sessionEnded runs on an ended session's goroutine, its end on disk:
// the restart policy applies, and the oldest ended sessions beyond
// history_limit go.
func (d *Daemon) sessionEnded(s *session.Session) {
	d.releaseWorktree(s)
	if !d.closing.Load() {
		d.restarts.consider(s)
	}
	d.trimSoon()
}

// historyTrimmer drops the oldest ended sessions beyond history_limit off
// the path of the ends: an end arms one pass for trimDelay later, and each
// end until then puts it off again, up to trimMaxDelay after the first. A
// burst of ends (stop --all of a thousand) is then one pass after it,
// rather than a count of the ended sessions, a sort of them and a removal
// at each end, and nobody's stop waits for it. The pass counts first, and
// does nothing more under the limit.
type historyTrimmer struct {
	mu      sync.Mutex
	t       *time.Timer
	armedAt time.Time // zero: no pass armed
	// pass serializes passes (a recovery's and a timer's).
	pass sync.Mutex
}

const (
	trimDelay    = time.Second
	trimMaxDelay = 10 * time.Second
)

func (d *Daemon) trimSoon() {
	if d.cfg.HistoryLimit <= 0 {
		return
	}
	tr := &d.trim
	tr.mu.Lock()
	defer tr.mu.Unlock()
	now := time.Now()
	switch {
	case tr.armedAt.IsZero():
		tr.armedAt = now
		if tr.t == nil {
			tr.t = time.AfterFunc(trimDelay, d.trimPass)
		} else {
			tr.t.Reset(trimDelay)
		}
	case now.Sub(tr.armedAt) < trimMaxDelay-trimDelay:
		tr.t.Reset(trimDelay)
	}
}

func (d *Daemon) trimPass() {
	d.trim.mu.Lock()
	d.trim.armedAt = time.Time{}
	d.trim.mu.Unlock()
	if !d.closing.Load() {
		d.trimHistory()
	}
}

// trimHistory drops the oldest ended sessions beyond history_limit.
func (d *Daemon) trimHistory() {
	d.trim.pass.Lock()
	defer d.trim.pass.Unlock()
	limit := d.cfg.HistoryLimit
	if limit <= 0 {
		return
	}
	if d.reg.ended() <= limit {
		return // the common case, without sorting every session at every end
	}
	var ended []*session.Session
	for _, s := range d.reg.all() {
		if !ipc.Live(s.State()) {
			ended = append(ended, s)
		}
	}
	for i := 0; i < len(ended)-limit; i++ {
		if err := d.remove(ended[i]); err != nil {
			d.log.Warn("remove old session", zap.Error(err))
		}
	}
}

// recordWriter writes session records into the state dir.
type recordWriter struct{ stateDir string }

// WriteRecord writes a session's record durably, except while the session
// starts: until its command runs, the record need only be there for a
// daemon that crashed, not a machine (whose crash would end the command
// too); the record of the running session, written before the start is
// answered, syncs it.
func (w recordWriter) WriteRecord(rec ipc.Session) error {
	path := filepath.Join(w.stateDir, "sessions", rec.ID, "session.json")
	if rec.State == ipc.StateStarting {
		return state.WriteJSONReusingUnsynced(path, rec)
	}
	return state.WriteJSONReusing(path, rec)
}
