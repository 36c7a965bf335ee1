package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// The daemon implements the API's interfaces (ipc.Backend) here and in
// projects.go; package ipc/server adapts HTTP requests to them.
var _ ipc.Backend = (*Daemon)(nil)

// launchParams say what session to launch.
type launchParams struct {
	UID            int
	Project        *state.Project
	Owner          *state.Owner
	Spec           config.Spec
	Name           string
	EnvKeys        []string
	RestartOf      string
	Restarts       int
	RestartHistory []time.Time
	// Resume is the agent conversation the session continues.
	Resume string
	// ID is the session's id when the start chose it already (for the
	// worktree named after it); Worktree the worktree it runs in.
	ID       string
	Worktree *ipc.Worktree
}

// launch registers a session and starts it, and returns once its command
// runs or its start has failed.
func (d *Daemon) launch(p launchParams) (*session.Session, session.StartInfo, error) {
	dir := p.Project.Dir()
	if _, err := proc.LookPath(p.Spec.Command[0], dir, session.EnvBase(p.Spec)); err != nil {
		return nil, session.StartInfo{}, ipc.BadRequest("%w", err)
	}
	// The checks and the registration are one step; the start itself runs
	// unlocked, the registered "starting" session holding the project.
	d.startMu.Lock()
	if d.closing.Load() {
		d.startMu.Unlock()
		return nil, session.StartInfo{}, ipc.Unavailable("sessiond is shutting down")
	}
	if !p.Spec.Concurrent {
		if live := d.reg.live(dir); len(live) > 0 {
			d.startMu.Unlock()
			return nil, session.StartInfo{}, ipc.Conflict("project %s already has a live session (%s); stop it first, or set concurrent = true in its sessiond.toml", dir, live[0].ID())
		}
	}
	if max := d.cfg.MaxSessions; max > 0 && len(d.reg.live("")) >= max {
		d.startMu.Unlock()
		return nil, session.StartInfo{}, ipc.Conflict("max_sessions (%d) live sessions already run", max)
	}
	switch {
	case p.Name == "":
		p.Name = d.reg.freeName(p.UID, ipc.NameFrom(filepath.Base(dir)))
	case p.RestartOf == "":
		if s := d.reg.nameHolder(p.UID, p.Name); s != nil {
			d.startMu.Unlock()
			return nil, session.StartInfo{}, ipc.Conflict("the name %q is in use by live session %s: choose another with --name, or stop that one", p.Name, s.ID())
		}
	}
	id := p.ID
	if id == "" {
		id = d.reg.newID()
	}
	if p.Worktree != nil {
		wt, err := d.holdWorktree(p.Worktree, id, p.Spec.PortRange)
		if err != nil {
			d.startMu.Unlock()
			return nil, session.StartInfo{}, err
		}
		p.Worktree = wt
	}
	s := session.New(session.Params{
		ID: id, Name: p.Name, Worktree: p.Worktree, UID: p.UID, Project: p.Project, Owner: p.Owner, Spec: p.Spec, EnvKeys: p.EnvKeys,
		RestartOf: p.RestartOf, Restarts: p.Restarts, RestartHistory: p.RestartHistory, Resume: p.Resume,
	}, &d.deps)
	d.reg.add(s)
	d.startMu.Unlock()
	s.Start()
	<-s.Started()
	info := s.TakeStartInfo()
	return s, info, info.Err
}

// ListSessions implements ipc.Sessions. A restart chain is one row, its
// latest session, unless opt.Chains asks for all.
func (d *Daemon) ListSessions(ctx context.Context, c ipc.Caller, opt ipc.ListOptions) ([]ipc.Session, error) {
	all := d.reg.all()
	restarted := map[string]bool{}
	if !opt.Chains {
		for _, s := range all {
			if of := s.RestartOf(); of != "" {
				restarted[of] = true
			}
		}
	}
	out := make([]ipc.Session, 0, len(all))
	for _, s := range all {
		if !visible(c, s) || (opt.Project != "" && s.ProjectDir() != opt.Project) || restarted[s.ID()] {
			continue
		}
		if !opt.All && !ipc.Live(s.State()) {
			continue
		}
		rec := s.Snapshot()
		rec.Spec = nil
		out = append(out, rec)
	}
	if opt.Stats {
		byID := make(map[string]*session.Session, len(out))
		for _, s := range all {
			if ipc.Live(s.State()) {
				byID[s.ID()] = s
			}
		}
		d.usage.fill(byID, out)
	}
	return out, nil
}

// StartSession implements ipc.Sessions.
func (d *Daemon) StartSession(ctx context.Context, c ipc.Caller, req ipc.StartRequest) (*ipc.StartResponse, error) {
	if d.closing.Load() {
		return nil, ipc.Unavailable("sessiond is shutting down")
	}
	p, owner, err := d.openProject(req.Dir, c.UID)
	if err != nil {
		return nil, err
	}
	if err := d.canUseDir(c, p.Dir()); err != nil {
		return nil, err
	}
	if req.Name != "" {
		if err := ipc.CheckName(req.Name); err != nil {
			return nil, ipc.BadRequest("%w", err)
		}
	}
	spec, err := d.resolveSpec(p, req)
	if err != nil {
		return nil, err
	}
	d.notes.loadProject(p)
	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	wt, err := d.startWorktree(ctx, c, p, owner, spec, req)
	if err != nil {
		return nil, err
	}
	if wt != nil {
		p = wt.project
	}
	resume, err := d.resumeFor(c, p, spec, req.Resume)
	if err != nil {
		wt.undo(d)
		return nil, err
	}
	s, info, err := d.launch(launchParams{UID: c.UID, Project: p, Owner: owner, Spec: spec, Name: req.Name, EnvKeys: keys, Resume: resume,
		ID: wt.sessionID(), Worktree: wt.wire()})
	if err != nil {
		wt.undo(d)
		return nil, err
	}
	return &ipc.StartResponse{Session: s.Snapshot(), Summary: info.Summary, Notices: append(wt.noticeList(), info.Notices...)}, nil
}

// GetSession implements ipc.Sessions.
func (d *Daemon) GetSession(ctx context.Context, c ipc.Caller, id string) (*ipc.Session, error) {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return nil, err
	}
	rec := s.Snapshot()
	return &rec, nil
}

// StopSession implements ipc.Sessions: it returns once the session's end
// is on disk.
func (d *Daemon) StopSession(ctx context.Context, c ipc.Caller, id string, req ipc.StopRequest) (*ipc.Session, error) {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return nil, err
	}
	grace := time.Duration(-1)
	if req.Grace != "" {
		g, err := config.ParseDuration(req.Grace)
		if err != nil {
			return nil, ipc.BadRequest("grace: %w", err)
		}
		if g.Duration < 0 {
			return nil, ipc.BadRequest("grace: want a duration of 0 or more, got %q", req.Grace)
		}
		grace = g.Duration
	}
	if err := s.Stop(ctx, session.Interrupted, grace); err != nil && !errors.Is(err, session.ErrEnded) {
		return nil, err
	}
	select {
	case <-s.Done():
	case <-s.Exited():
		// Left running (daemon shutdown with on_shutdown = "leave").
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rec := s.Snapshot()
	return &rec, nil
}

// RestartSession implements ipc.Sessions.
func (d *Daemon) RestartSession(ctx context.Context, c ipc.Caller, id string, req ipc.RestartRequest) (*ipc.StartResponse, error) {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return nil, err
	}
	if ipc.Live(s.Snapshot().State) {
		if _, err := d.StopSession(ctx, c, s.ID(), ipc.StopRequest(req)); err != nil {
			return nil, err
		}
	}
	rec := s.Snapshot()
	if rec.State == ipc.StateStarting || ipc.Live(rec.State) {
		return nil, ipc.Conflict("session %s did not stop; try again", s.ID())
	}
	if next := d.restarts.successorOf(s.ID()); next != "" {
		return nil, ipc.Conflict("session %s was restarted already, as %s: restart that one", s.ID(), next)
	}
	if s.Project() == nil {
		return nil, ipc.Conflict("the project %s of session %s is unreachable", s.ProjectDir(), s.ID())
	}
	ns, info, err := d.launch(launchParams{
		UID: s.UID(), Project: s.Project(), Owner: s.Owner(), Spec: s.Spec(), Name: s.Name(), EnvKeys: rec.EnvKeys,
		RestartOf: s.ID(), Restarts: rec.Restarts + 1, RestartHistory: s.RestartHistory(), Resume: restartResume(s, true), Worktree: rec.Worktree,
	})
	if err != nil {
		return nil, err
	}
	d.restarts.settle(s.ID(), ns.ID())
	return &ipc.StartResponse{Session: ns.Snapshot(), Summary: info.Summary, Notices: info.Notices}, nil
}

// RemoveSession implements ipc.Sessions.
func (d *Daemon) RemoveSession(ctx context.Context, c ipc.Caller, id string) error {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return err
	}
	if ipc.Live(s.Snapshot().State) {
		return ipc.Conflict("session %s is live: stop it first (sessionctl stop %s)", s.ID(), s.ID())
	}
	return d.remove(s)
}

// PruneSessions implements ipc.Sessions.
func (d *Daemon) PruneSessions(ctx context.Context, c ipc.Caller, req ipc.PruneRequest) (*ipc.PruneResponse, error) {
	older, err := config.ParseDuration(req.OlderThan)
	if err != nil || older.Duration < 0 {
		return nil, ipc.BadRequest("older_than %q: want a duration of 0 or more, such as 24h", req.OlderThan)
	}
	cutoff := d.deps.Clock.Now().Add(-older.Duration)
	out := &ipc.PruneResponse{Removed: []string{}}
	for _, s := range d.reg.all() {
		rec := s.Snapshot()
		if !visible(c, s) || ipc.Live(rec.State) || rec.EndedAt == nil || rec.EndedAt.After(cutoff) {
			continue
		}
		if err := d.remove(s); err != nil {
			return out, err
		}
		out.Removed = append(out.Removed, s.ID())
	}
	return out, nil
}

// remove drops an ended session from the registry and its directory from
// the state dir.
func (d *Daemon) remove(s *session.Session) error {
	d.reg.remove(s.ID())
	if err := os.RemoveAll(s.Dir()); err != nil {
		return fmt.Errorf("remove session %s: %w", s.ID(), err)
	}
	return nil
}

// running returns the live session id for a request that needs one that
// runs: a session still starting or already ended is a conflict.
func (d *Daemon) running(c ipc.Caller, id, what string) (*session.Session, error) {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return nil, err
	}
	switch st := s.Snapshot().State; {
	case st == ipc.StateStarting:
		return nil, ipc.Conflict("session %s is still starting (preflight, sidecars); %s once it runs", s.ID(), what)
	case !ipc.Live(st):
		return nil, ipc.Conflict("session %s has ended; %s", s.ID(), what)
	}
	return s, nil
}

// ended turns a request that reached a session after its end into the
// conflict the client sees.
func ended(s *session.Session, err error, what string) error {
	if errors.Is(err, session.ErrEnded) {
		return ipc.Conflict("session %s has ended; %s", s.ID(), what)
	}
	return err
}

// SignalSession implements ipc.Sessions.
func (d *Daemon) SignalSession(ctx context.Context, c ipc.Caller, id string, req ipc.SignalRequest) error {
	sig, err := config.ParseSignal(req.Signal)
	if err != nil {
		return ipc.BadRequest("signal: %w", err)
	}
	if sig.Num == 0 {
		return ipc.BadRequest("signal: none given")
	}
	s, err := d.running(c, id, "only a running session can be signalled")
	if err != nil {
		return err
	}
	return ended(s, s.Signal(ctx, sig.Num), "only a running session can be signalled")
}

// ExtendSession implements ipc.Sessions.
func (d *Daemon) ExtendSession(ctx context.Context, c ipc.Caller, id string, req ipc.ExtendRequest) (*ipc.Session, error) {
	by, err := config.ParseDuration(req.By)
	if err != nil || by.Duration <= 0 {
		return nil, ipc.BadRequest("extend by %q: want a positive duration such as 30m or 1h", req.By)
	}
	const what = "only a live session can be extended"
	s, err := d.running(c, id, what)
	if err != nil {
		return nil, err
	}
	rec, err := s.Extend(ctx, by.Duration, req.ByAgent)
	if err != nil {
		return nil, ended(s, err, what)
	}
	return &rec, nil
}

// ReportSession implements ipc.Sessions.
func (d *Daemon) ReportSession(ctx context.Context, c ipc.Caller, id string, rep ipc.Report) (*ipc.Report, error) {
	rep, err := session.CleanReport(rep)
	if err != nil {
		return nil, err
	}
	const what = "reports come from inside a live session"
	s, err := d.running(c, id, what)
	if err != nil {
		return nil, err
	}
	merged, err := s.Report(ctx, rep, c.PID, c.Root())
	if err != nil {
		return nil, ended(s, err, what)
	}
	return &merged, nil
}

// CheckpointSession implements ipc.Sessions.
func (d *Daemon) CheckpointSession(ctx context.Context, c ipc.Caller, id string) (*ipc.CheckpointResult, error) {
	const what = "checkpoint a project with a live session, or start one"
	s, err := d.running(c, id, what)
	if err != nil {
		return nil, err
	}
	res, err := s.Checkpoint(ctx)
	if err != nil {
		return nil, ended(s, err, what)
	}
	return &res, nil
}

// SessionHandoff implements ipc.Sessions.
func (d *Daemon) SessionHandoff(ctx context.Context, c ipc.Caller, id string) (*ipc.Handoff, error) {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return nil, err
	}
	h, err := state.LoadHandoff(filepath.Join(s.Dir(), "handoff.json"))
	if errors.Is(err, fs.ErrNotExist) {
		if ipc.Live(s.Snapshot().State) {
			return nil, ipc.NotFound("session %s is still running: its handoff is written when it ends", s.ID())
		}
		return nil, ipc.NotFound("session %s has no handoff", s.ID())
	}
	if err != nil {
		return nil, ipc.Conflict("%w", err)
	}
	return h, nil
}

// Version implements ipc.System.
func (d *Daemon) Version(context.Context) ipc.Version {
	mode := "user"
	if os.Geteuid() == 0 {
		mode = "system"
	}
	return ipc.Version{Version: d.version, API: ipc.APIVersion, PID: os.Getpid(), Socket: d.cfg.Socket, Mode: mode, StateDir: d.cfg.StateDir}
}

// Health implements ipc.System.
func (d *Daemon) Health(context.Context) ipc.Health {
	all := d.reg.all()
	live := 0
	for _, s := range all {
		if ipc.Live(s.Snapshot().State) {
			live++
		}
	}
	return ipc.Health{Status: "ok", Sessions: len(all), Live: live, Since: d.since}
}

// Subscribe implements ipc.Events.
func (d *Daemon) Subscribe(ctx context.Context, c ipc.Caller, opt ipc.EventOptions) (<-chan ipc.Event, error) {
	if !opt.Follow {
		return d.bus.recent(c), nil
	}
	if d.closing.Load() {
		return nil, ipc.Unavailable("sessiond is shutting down")
	}
	return d.bus.subscribe(ctx, c), nil
}

// Follow waits until the session id and every restart of its chain have
// ended, and returns the record of the last one.
func (d *Daemon) Follow(ctx context.Context, c ipc.Caller, id string) (*ipc.Session, error) {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return nil, err
	}
	for {
		// Exited comes after the restart policy was applied.
		select {
		case <-s.Exited():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		pending, next, changed := d.restarts.next(s.ID())
		if pending {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if ns := d.reg.get(next); next != "" && ns != nil {
			s = ns
			continue
		}
		rec := s.Snapshot()
		return &rec, nil
	}
}
