package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Options configure a Daemon.
type Options struct {
	Config  *config.Config
	Log     *zap.Logger
	Version string
	// Ready is called once the socket answers (the service manager's
	// readiness notification).
	Ready func()
}

// Daemon is the supervisor.
type Daemon struct {
	cfg     *config.Config
	log     *zap.Logger
	version string
	ready   func()
	since   time.Time
	bootID  string

	reg *registry
	bus *bus
	out *outputWatcher
	ext *extras

	// startMu serialises starts, so that the one-live-session-per-project
	// check and the registration are one step.
	startMu sync.Mutex
	closing atomic.Bool
	// wg counts session goroutines.
	wg sync.WaitGroup

	// restarts are the pending restarts, by the id of the ended session.
	restartMu sync.Mutex
	restarts  map[string]*time.Timer
}

// New prepares a daemon: state dir, records of earlier runs, watchers.
func New(opt Options) (*Daemon, error) {
	cfg := opt.Config
	if err := state.EnsureDir(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", cfg.StateDir, err)
	}
	if err := state.EnsureDir(filepath.Join(cfg.StateDir, "sessions")); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", cfg.StateDir, err)
	}
	d := &Daemon{
		cfg: cfg, log: opt.Log, version: opt.Version, ready: opt.Ready,
		since: time.Now(), bootID: proc.BootID(),
		reg: newRegistry(), bus: newBus(), restarts: map[string]*time.Timer{},
	}
	var err error
	if d.out, err = newOutputWatcher(d.log.Named("output")); err != nil {
		return nil, err
	}
	if d.ext, err = newExtras(d); err != nil {
		d.out.close()
		return nil, err
	}
	return d, nil
}

// Run serves the API on the configured socket until ctx ends, then shuts
// down: sessions stopped (or left, per on_shutdown), handoffs written.
// A second cancellation of hurry (e.g. a second SIGTERM) cuts stop grace
// periods short without losing any session's end.
func (d *Daemon) Run(ctx context.Context, hurry <-chan struct{}) error {
	if err := proc.EnableSubreaper(); err != nil {
		d.log.Warn("cannot become a child subreaper; escaped descendants go to init", zap.Error(err))
	}
	perm := fs.FileMode(0o600)
	if len(d.cfg.AllowedGroups) > 0 {
		perm = 0o660
	}
	l, err := ipc.Listen(d.cfg.Socket, perm)
	if err != nil {
		d.close()
		return err
	}
	if err := d.shareSocket(); err != nil {
		l.Close()
		d.close()
		return err
	}
	d.recover()
	access, err := d.accessFunc()
	if err != nil {
		l.Close()
		d.close()
		return err
	}
	srv := ipc.NewServer(d, access, d.log)
	d.registerRoutes(srv)
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

// shutdown runs the ordered steps: refuse new sessions, end or leave the
// live ones, close streams and the socket, release watchers.
func (d *Daemon) shutdown(srv *ipc.Server, hurry <-chan struct{}) {
	d.closing.Store(true)
	d.cancelRestarts()
	d.log.Info("shutting down", zap.String("on_shutdown", d.cfg.OnShutdown))
	if d.cfg.OnShutdown == config.ShutdownStop {
		d.stopAll(hurry)
	} else {
		d.leaveAll()
	}
	d.bus.closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
	d.close()
	d.log.Info("sessiond stopped")
}

func (d *Daemon) close() {
	d.ext.close()
	d.out.close()
}

// stopAll stops every live session gracefully and waits until every end is
// on disk. A signal on hurry cuts the remaining grace periods to zero.
func (d *Daemon) stopAll(hurry <-chan struct{}) {
	var live []*session
	for _, s := range d.reg.all() {
		if ipc.Live(s.snapshot().State) && s.child != nil {
			live = append(live, s)
		}
	}
	ctx := context.Background()
	for _, s := range live {
		go func() { _ = s.send(ctx, command{kind: cmdStop, reason: ipc.EndInterrupted, grace: -1}) }()
	}
	allDone := make(chan struct{})
	go func() { d.wg.Wait(); close(allDone) }()
	select {
	case <-allDone:
		return
	case <-hurry:
		d.log.Warn("second signal: killing sessions now; their handoffs are still written")
		for _, s := range live {
			go func() { _ = s.send(ctx, command{kind: cmdStop, reason: ipc.EndInterrupted, grace: 0}) }()
		}
	}
	<-allDone
}

// leaveAll leaves live sessions running for the next daemon to adopt.
func (d *Daemon) leaveAll() {
	for _, s := range d.reg.all() {
		if ipc.Live(s.snapshot().State) && s.child != nil {
			s.log.Info("leaving session running for adoption", zap.Int("pid", s.child.PID))
		}
	}
}

// shareSocket gives the socket to the first of allowed_groups, so that
// their members can connect (the peer check then lets them in).
func (d *Daemon) shareSocket() error {
	if len(d.cfg.AllowedGroups) == 0 {
		return nil
	}
	grp, err := user.LookupGroup(d.cfg.AllowedGroups[0])
	if err != nil {
		return fmt.Errorf("allowed_groups: %w", err)
	}
	gid, _ := strconv.Atoi(grp.Gid)
	if err := os.Chown(d.cfg.Socket, -1, gid); err != nil {
		return fmt.Errorf("give the socket to group %s: %w", grp.Name, err)
	}
	if fi, err := os.Stat(filepath.Dir(d.cfg.Socket)); err == nil && fi.Mode().Perm()&0o011 == 0 {
		d.log.Warn("allowed_groups members cannot reach the socket: its directory is closed to them",
			zap.String("dir", filepath.Dir(d.cfg.Socket)), zap.String("mode", fi.Mode().Perm().String()))
	}
	return nil
}

// accessFunc allows the daemon's own uid, root, and members of the
// configured groups.
func (d *Daemon) accessFunc() (ipc.AccessFunc, error) {
	self := os.Geteuid()
	gids := map[int]bool{}
	for _, g := range d.cfg.AllowedGroups {
		grp, err := user.LookupGroup(g)
		if err != nil {
			return nil, fmt.Errorf("allowed_groups: %w", err)
		}
		n, _ := strconv.Atoi(grp.Gid)
		gids[n] = true
	}
	return func(c ipc.Caller) bool {
		if c.UID == self || c.UID == 0 {
			return true
		}
		if len(gids) == 0 {
			return false
		}
		if gids[c.GID] {
			return true
		}
		u, err := user.LookupId(strconv.Itoa(c.UID))
		if err != nil {
			return false
		}
		list, _ := u.GroupIds()
		for _, g := range list {
			if n, _ := strconv.Atoi(g); gids[n] {
				return true
			}
		}
		return false
	}, nil
}

func (d *Daemon) recordPath(id string) string {
	return filepath.Join(d.cfg.StateDir, "sessions", id, "session.json")
}

func (d *Daemon) saveRecord(rec ipc.Session) error {
	return state.WriteJSON(d.recordPath(rec.ID), rec)
}

// sessionEnded applies the restart policy and trims history.
func (d *Daemon) sessionEnded(s *session) {
	if rec := s.snapshot(); rec.State == ipc.StateEnded {
		d.maybeRestart(s, rec.EndReason)
	}
	d.trimHistory()
}

// trimHistory drops the oldest ended sessions beyond history_limit.
func (d *Daemon) trimHistory() {
	limit := d.cfg.HistoryLimit
	if limit <= 0 {
		return
	}
	var ended []*session
	for _, s := range d.reg.all() {
		if !ipc.Live(s.snapshot().State) {
			ended = append(ended, s)
		}
	}
	for i := 0; i < len(ended)-limit; i++ {
		s := ended[i]
		d.reg.remove(s.id)
		if err := os.RemoveAll(s.dir); err != nil {
			d.log.Warn("remove old session", zap.String("session", s.id), zap.Error(err))
		}
	}
}

// recover loads the records of earlier runs. A session recorded as live
// whose process is gone ended unobserved: it is ended as crashed.
func (d *Daemon) recover() {
	root := filepath.Join(d.cfg.StateDir, "sessions")
	entries, err := os.ReadDir(root)
	if err != nil {
		d.log.Warn("read sessions", zap.Error(err))
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		var rec ipc.Session
		err := state.ReadJSON(filepath.Join(root, e.Name(), "session.json"), &rec)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				d.log.Warn("skipping unreadable session record", zap.String("dir", e.Name()), zap.Error(err))
			}
			continue
		}
		if rec.ID != e.Name() {
			d.log.Warn("skipping session record with a mismatched id", zap.String("dir", e.Name()), zap.String("id", rec.ID))
			continue
		}
		spec := d.cfg.Defaults.Clone()
		if rec.Spec != nil {
			spec = *rec.Spec
		}
		// Env values are never on disk: take the project's and the
		// daemon's again (values given with --env are gone).
		if p, err := config.LoadProject(filepath.Join(rec.ProjectDir, config.ProjectFile), d.cfg.Defaults.Clone()); err == nil {
			spec.Env = p.Env
		}
		s := &session{
			d: d, id: rec.ID, uid: rec.UID, projectDir: rec.ProjectDir, startedAt: rec.StartedAt,
			dir: filepath.Join(root, rec.ID), spec: spec, rec: rec,
			cmds: make(chan command, 4), done: make(chan struct{}), output: make(chan struct{}),
		}
		s.log = d.log.With(zap.String("session", rec.ID))
		d.reg.add(s)
		if !ipc.Live(rec.State) {
			close(s.done)
			continue
		}
		d.recoverLive(s)
	}
	d.sweepOrphans()
	d.trimHistory()
}

// sweepOrphans kills processes of this daemon's sessions (known by the
// socket in their environment) that belong to no live session: a child
// spawned just before a crash, before its record was written, or a
// descendant that outlived its session while no daemon ran.
func (d *Daemon) sweepOrphans() {
	for pid, id := range proc.SessionsByEnv(d.cfg.Socket) {
		if s, err := d.reg.lookup(ipc.Caller{UID: 0}, id); err == nil && s.id == id && ipc.Live(s.snapshot().State) {
			continue
		}
		d.log.Warn("killing a process of no live session", zap.Int("pid", pid), zap.String("session", id))
		_ = proc.Signal(pid, syscall.SIGKILL)
	}
}

// Version implements ipc.Backend.
func (d *Daemon) Version() ipc.Version {
	return ipc.Version{Version: d.version, API: ipc.APIVersion, PID: os.Getpid(), Socket: d.cfg.Socket}
}

// Health implements ipc.Backend.
func (d *Daemon) Health() ipc.Health {
	all := d.reg.all()
	live := 0
	for _, s := range all {
		if ipc.Live(s.snapshot().State) {
			live++
		}
	}
	return ipc.Health{Status: "ok", Sessions: len(all), Live: live, Since: d.since}
}

// ListSessions implements ipc.Backend.
func (d *Daemon) ListSessions(ctx context.Context, c ipc.Caller, opt ipc.ListOptions) ([]ipc.Session, error) {
	var out []ipc.Session
	for _, s := range d.reg.all() {
		if !visible(c, s) || (opt.Project != "" && s.projectDir != opt.Project) {
			continue
		}
		rec := s.snapshot()
		if !opt.All && !ipc.Live(rec.State) {
			continue
		}
		d.ext.decorate(s, &rec)
		rec.Spec = nil
		out = append(out, rec)
	}
	return out, nil
}

// GetSession implements ipc.Backend.
func (d *Daemon) GetSession(ctx context.Context, c ipc.Caller, id string) (*ipc.Session, error) {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return nil, err
	}
	rec := s.snapshot()
	d.ext.decorate(s, &rec)
	return &rec, nil
}

// StopSession implements ipc.Backend: it returns once the session's end is
// on disk.
func (d *Daemon) StopSession(ctx context.Context, c ipc.Caller, id string, req ipc.StopRequest) (*ipc.Session, error) {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return nil, err
	}
	grace := time.Duration(-1)
	if req.Grace != "" {
		g, err := config.ParseDuration(req.Grace)
		if err != nil {
			return nil, ipc.BadRequest("grace: %v", err)
		}
		grace = g.Duration
	}
	if ipc.Live(s.snapshot().State) {
		err := s.send(ctx, command{kind: cmdStop, reason: ipc.EndInterrupted, grace: grace})
		if err != nil && !errors.Is(err, errEnded) {
			return nil, err
		}
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rec := s.snapshot()
	return &rec, nil
}

// SignalSession implements ipc.Backend.
func (d *Daemon) SignalSession(ctx context.Context, c ipc.Caller, id string, req ipc.SignalRequest) error {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return err
	}
	sig, err := config.ParseSignal(req.Signal)
	if err != nil {
		return ipc.BadRequest("%v", err)
	}
	if sig.Num == 0 {
		return ipc.BadRequest("no signal given")
	}
	if !ipc.Live(s.snapshot().State) || s.child == nil {
		return ipc.Conflict("session %s has ended", s.id)
	}
	if err := s.signal(sig.Num); err != nil {
		return fmt.Errorf("signal session %s: %w", s.id, err)
	}
	return nil
}

// Subscribe implements ipc.Backend.
func (d *Daemon) Subscribe(ctx context.Context, c ipc.Caller, opt ipc.EventOptions) (<-chan ipc.Event, error) {
	if !opt.Follow {
		return d.bus.recent(c), nil
	}
	if d.closing.Load() {
		return nil, ipc.Unavailable("sessiond is shutting down")
	}
	return d.bus.subscribe(ctx, c), nil
}

var _ ipc.Backend = (*Daemon)(nil)
