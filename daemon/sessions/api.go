package sessions

import (
	"go.uber.org/zap"
	"syscall"

	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/access"
	"github.com/sessiond/sessiond/daemon/registry"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// ListSessions implements ipc.Sessions. A restart chain is one row, its
// latest session, unless opt.Chains asks for all.
func (d *Service) ListSessions(ctx context.Context, c ipc.Caller, opt ipc.ListOptions) ([]ipc.Session, error) {
	all := d.reg.All()
	shown := d.listed(c, opt, all)
	out := make([]ipc.Session, len(shown))
	var places map[string]ipc.QueuePlace
	for i, s := range shown {
		out[i] = d.listedRecord(s, &places)
		out[i].Spec = nil
	}
	if opt.Stats {
		d.usage.fill(all, len(out), func(i int) (*session.Session, string) { return shown[i], out[i].State },
			func(i int, u *ipc.Usage) { out[i].Usage = u })
	}
	return out, nil
}

// ListSessionRows implements ipc.Sessions: ListSessions's rows, each
// made from a record that is not kept (the garbage of whole records was
// a third of the daemon's answer to `sessionctl ps`).
func (d *Service) ListSessionRows(ctx context.Context, c ipc.Caller, opt ipc.ListOptions, dst []ipc.SessionRow) ([]ipc.SessionRow, error) {
	all := d.reg.All()
	shown := d.listed(c, opt, all)
	out := slices.Grow(dst[:0], len(shown))[:len(shown)]
	var places map[string]ipc.QueuePlace
	for i, s := range shown {
		out[i] = s.Row()
		if out[i].State == ipc.StateQueued {
			out[i].Queue = d.queuePlace(out[i].ID, &places)
		}
	}
	if opt.Stats {
		d.usage.fill(all, len(out), func(i int) (*session.Session, string) { return shown[i], out[i].State },
			func(i int, u *ipc.Usage) { out[i].Usage = u })
	}
	return out, nil
}

// listed are the sessions among all that the listing shows c.
func (d *Service) listed(c ipc.Caller, opt ipc.ListOptions, all []*session.Session) []*session.Session {
	restarted := map[string]bool{}
	if !opt.Chains {
		for _, s := range all {
			if of := s.RestartOf(); of != "" {
				restarted[of] = true
			}
		}
	}
	shown := make([]*session.Session, 0, len(all))
	for _, s := range all {
		if !registry.Visible(c, s) || (opt.Project != "" && s.ProjectDir() != opt.Project) || restarted[s.ID()] {
			continue
		}
		if !opt.All && !ipc.Live(s.State()) {
			continue
		}
		shown = append(shown, s)
	}
	return shown
}

// listedRecord is a listed session's record, a queued one's with its
// place in the queue (places, read at the first one).
func (d *Service) listedRecord(s *session.Session, places *map[string]ipc.QueuePlace) ipc.Session {
	rec := s.Snapshot()
	if rec.State == ipc.StateQueued {
		rec.Queue = d.queuePlace(rec.ID, places)
	}
	return rec
}

// queuePlace is a queued session's place in the queue (nil if it has
// none), from places, which the first call reads.
func (d *Service) queuePlace(id string, places *map[string]ipc.QueuePlace) *ipc.QueuePlace {
	if *places == nil {
		*places = d.queue.places()
	}
	if p, ok := (*places)[id]; ok {
		return &p
	}
	return nil
}

// liveByID are the live sessions among all, by id.
func liveByID(all []*session.Session) map[string]*session.Session {
	byID := make(map[string]*session.Session, len(all))
	for _, s := range all {
		if ipc.Live(s.State()) {
			byID[s.ID()] = s
		}
	}
	return byID
}

// StartSession implements ipc.Sessions.
func (d *Service) StartSession(ctx context.Context, c ipc.Caller, req ipc.StartRequest) (*ipc.StartResponse, error) {
	if d.closing.Load() {
		return nil, ipc.Unavailable("sessiond is shutting down")
	}
	if err := d.allowStarts(c, 1); err != nil {
		return nil, err
	}
	return d.startSession(ctx, c, req)
}

// allowStarts takes n starts of c's allowance (max_starts_per_minute_per_user).
func (d *Service) allowStarts(c ipc.Caller, n int) error {
	if d.trusted(c.UID) {
		return nil
	}
	return d.starts.take(c.UID, n)
}

// startSession is StartSession, its allowance taken.
func (d *Service) startSession(ctx context.Context, c ipc.Caller, req ipc.StartRequest) (*ipc.StartResponse, error) {
	p, owner, err := access.OpenProject(req.Dir, c.UID)
	if err != nil {
		return nil, err
	}
	u, err := d.userOfProject(c, p.Dir())
	if err != nil {
		return nil, err
	}
	byRoot := u != nil
	if u != nil {
		// Root starts a session in a user's project as that user: what
		// the project's files name (its command, preflight, services,
		// notification commands) never runs as root, and root's
		// environment is not handed to the user (a clean one, with the
		// --env values given).
		c = ipc.Caller{UID: u.UID, GID: u.GID, PID: c.PID}
		req.Environ = nil
		if p, owner, err = access.OpenProject(req.Dir, c.UID); err != nil {
			return nil, err
		}
	}
	if err := access.CheckDir(c, p.Dir()); err != nil {
		return nil, err
	}
	if req.Name != "" {
		if err := ipc.CheckName(req.Name); err != nil {
			return nil, ipc.BadRequest("%w", err)
		}
	}
	sp, err := spec.Resolve(d.cfg.Defaults, p, req)
	if err != nil {
		return nil, err
	}
	d.notes.LoadProject(p)
	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	wt, err := d.worktrees.Begin(ctx, c, p, owner, sp, req)
	if err != nil {
		return nil, err
	}
	if wt != nil {
		p = wt.Project()
	}
	resume, err := d.resumeFor(c, p, sp, req.Resume)
	if err != nil {
		d.worktrees.Undo(wt)
		return nil, err
	}
	var environ []string
	if sp.InheritsEnv() {
		environ = req.Environ
	}
	after, err := d.afterPlace(c, sp, req)
	if err != nil {
		d.worktrees.Undo(wt)
		return nil, err
	}
	s, info, err := d.launch(launchParams{UID: c.UID, Project: p, Owner: owner, Spec: sp, Name: req.Name, EnvKeys: keys, Environ: environ, Resume: resume,
		ID: wt.SessionID(), Worktree: wt.Wire(), Queue: after, NoQueue: req.Queue != nil && !*req.Queue, ByRoot: byRoot})
	if err != nil {
		d.worktrees.Undo(wt)
		return nil, err
	}
	return &ipc.StartResponse{Session: s.Snapshot(), Summary: info.Summary, Notices: append(wt.Notices(), info.Notices...)}, nil
}

// GetSession implements ipc.Sessions.
func (d *Service) GetSession(ctx context.Context, c ipc.Caller, id string) (*ipc.Session, error) {
	s, err := d.reg.Lookup(c, id)
	if err != nil {
		return nil, err
	}
	rec := s.Snapshot()
	return &rec, nil
}

// StopSession implements ipc.Sessions: it returns once the session's end
// is on disk.
func (d *Service) StopSession(ctx context.Context, c ipc.Caller, id string, req ipc.StopRequest) (*ipc.Session, error) {
	s, err := d.reg.Lookup(c, id)
	if err != nil {
		return nil, err
	}
	return d.stopSession(ctx, c, s, req.Grace, false)
}

// stopSession stops s for c, a restart to follow or not, and returns
// once its end is on disk.
func (d *Service) stopSession(ctx context.Context, c ipc.Caller, s *session.Session, graceArg string, restart bool) (*ipc.Session, error) {
	grace, err := parseGrace(graceArg)
	if err != nil {
		return nil, err
	}
	if err := s.StopAsked(ctx, session.StopAsk{Reason: session.Interrupted, Grace: grace, By: c.UID, Restart: restart}); err != nil && !errors.Is(err, session.ErrEnded) {
		return nil, err
	}
	if !restart {
		// Ended already, its restart policy's successor waiting out its
		// backoff: the stop ends the chain.
		d.restarts.Cancel(s.ID())
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
func (d *Service) RestartSession(ctx context.Context, c ipc.Caller, id string, req ipc.RestartRequest) (*ipc.StartResponse, error) {
	s, err := d.reg.Lookup(c, id)
	if err != nil {
		return nil, err
	}
	if err := d.allowStarts(c, 1); err != nil {
		return nil, err
	}
	// One restart of a session at a time: the end of an adopted session
	// would otherwise take this stop's intent for an earlier daemon's,
	// and start the successor itself (finishRestart).
	if _, busy := d.finishing.LoadOrStore(s.ID(), true); busy {
		return nil, ipc.Conflict("session %s is being restarted already", s.ID())
	}
	defer d.finishing.Delete(s.ID())
	if ipc.Live(s.Snapshot().State) {
		// The restart is in the stop's record: a daemon that dies before
		// the new session starts leaves the next one to start it, once.
		if _, err := d.stopSession(ctx, c, s, req.Grace, true); err != nil {
			return nil, err
		}
	}
	rec := s.Snapshot()
	if rec.State == ipc.StateStarting || ipc.Live(rec.State) {
		return nil, ipc.Conflict("session %s did not stop; try again", s.ID())
	}
	// The caller's environment, for a restart of their own session; the
	// one the session ran with for anyone else's (root's, say).
	environ := s.Environ()
	if req.Environ != nil && c.UID == s.UID() && s.Spec().InheritsEnv() {
		environ = req.Environ
	}
	ns, info, err := d.restartOf(s, environ)
	if err != nil {
		return nil, err
	}
	return &ipc.StartResponse{Session: ns.Snapshot(), Summary: info.Summary, Notices: info.Notices}, nil
}

// restartOf starts the session that restarts the ended session s, in its
// project with its spec and environ, continuing its conversation.
func (d *Service) restartOf(s *session.Session, environ []string) (*session.Session, session.StartInfo, error) {
	rec := s.Snapshot()
	if s.Project() == nil {
		return nil, session.StartInfo{}, ipc.Conflict("the project %s of session %s is unreachable", s.ProjectDir(), s.ID())
	}
	return d.launch(launchParams{
		UID: s.UID(), Project: s.Project(), Owner: s.Owner(), Spec: s.Spec(), Name: s.Name(), EnvKeys: rec.EnvKeys, Environ: environ,
		RestartOf: s.ID(), Restarts: rec.Restarts + 1, RestartHistory: s.RestartHistory(), Resume: restartResume(s, true), Worktree: rec.Worktree,
	})
}

// finishRestart starts the successor of s, an ended session whose record
// says sessionctl restart asked for one, if no session restarted it yet:
// the daemon that was asked died before it started it.
func (d *Service) finishRestart(s *session.Session) {
	if _, busy := d.finishing.LoadOrStore(s.ID(), true); busy {
		return
	}
	defer d.finishing.Delete(s.ID())
	rec := s.Snapshot()
	if rec.Stop == nil || !rec.Stop.Restart || ipc.Live(rec.State) || d.reg.Successor(s.ID()) != "" || d.closing.Load() {
		return
	}
	ns, _, err := d.restartOf(s, s.Environ())
	if err != nil {
		d.log.Warn("the restart asked before the daemon stopped did not start", zap.String("session", s.ID()), zap.Error(err))
		return
	}
	d.log.Info("started the restart asked before the daemon stopped", zap.String("session", s.ID()), zap.String("new", ns.ID()))
}

// RemoveSession implements ipc.Sessions.
func (d *Service) RemoveSession(ctx context.Context, c ipc.Caller, id string) error {
	s, err := d.reg.Lookup(c, id)
	if err != nil {
		return err
	}
	if ipc.Live(s.Snapshot().State) {
		return ipc.Conflict("session %s is live: stop it first (sessionctl stop %s)", s.ID(), s.ID())
	}
	return d.remove(s)
}

// PruneSessions implements ipc.Sessions.
func (d *Service) PruneSessions(ctx context.Context, c ipc.Caller, req ipc.PruneRequest) (*ipc.PruneResponse, error) {
	older, err := config.ParseDuration(req.OlderThan)
	if err != nil || older.Duration < 0 {
		return nil, ipc.BadRequest("older_than %q: want a duration of 0 or more, such as 24h", req.OlderThan)
	}
	cutoff := d.deps.Clock.Now().Add(-older.Duration)
	out := &ipc.PruneResponse{Removed: []string{}}
	for _, s := range d.reg.All() {
		rec := s.Snapshot()
		if !registry.Visible(c, s) || ipc.Live(rec.State) || rec.EndedAt == nil || rec.EndedAt.After(cutoff) {
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
// The directory of a removal is first renamed to removedPrefix+ID, in
// one durable step: a daemon that dies in the middle of deleting it
// leaves a name the next one deletes, never half a session.
func (d *Service) remove(s *session.Session) error {
	d.reg.Remove(s.ID())
	gone := filepath.Join(filepath.Dir(s.Dir()), removedPrefix+s.ID())
	if err := os.Rename(s.Dir(), gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove session %s: %w", s.ID(), err)
	}
	_ = state.SyncDir(filepath.Dir(s.Dir()))
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("remove session %s: %w", s.ID(), err)
	}
	return nil
}

// removedPrefix names a session directory being deleted.
const removedPrefix = ".removed-"

// running returns the live session id for a request that needs one that
// runs: a session still in its preflight or sidecars, or already ended, is
// a conflict. One whose start has reached its command takes the request
// once the start is over: the command may ask the moment it runs.
func (d *Service) running(c ipc.Caller, id, what string) (*session.Session, error) {
	s, err := d.reg.Lookup(c, id)
	if err != nil {
		return nil, err
	}
	switch st := s.Snapshot().State; {
	case st == ipc.StateStarting && !s.Launching():
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
func (d *Service) SignalSession(ctx context.Context, c ipc.Caller, id string, req ipc.SignalRequest) error {
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
func (d *Service) ExtendSession(ctx context.Context, c ipc.Caller, id string, req ipc.ExtendRequest) (*ipc.Session, error) {
	by, err := config.ParseDuration(req.By)
	if err != nil || by.Duration <= 0 {
		return nil, ipc.BadRequest("extend by %q: want a positive duration such as 30m or 1h", req.By)
	}
	const what = "only a live session can be extended"
	s, err := d.running(c, id, what)
	if err != nil {
		return nil, err
	}
	rec, err := s.Extend(ctx, by.Duration, req.ByAgent, c.PID)
	if err != nil {
		return nil, ended(s, err, what)
	}
	return &rec, nil
}

// ReportSession implements ipc.Sessions.
func (d *Service) ReportSession(ctx context.Context, c ipc.Caller, id string, rep ipc.Report) (*ipc.Report, error) {
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

// ResolveLive implements projects.Resolver: the blockers resolved in each
// live session of dir that is c's (or any, for root), as a report from
// inside it would.
func (d *Service) ResolveLive(ctx context.Context, c ipc.Caller, dir string, ids []string) (told []string, open, resolved []ipc.Blocker, err error) {
	for _, s := range d.reg.Live(dir) {
		if !c.Root() && c.UID != s.UID() {
			continue
		}
		before := s.Snapshot().ResolvedBlockers
		if _, err := s.Report(ctx, ipc.Report{Resolve: ids}, c.PID, true); err != nil {
			if errors.Is(err, session.ErrEnded) {
				// Its end writes the session state as it knew it: the
				// change goes into the state after that.
				select {
				case <-s.Done():
				case <-ctx.Done():
					return nil, nil, nil, ctx.Err()
				}
				continue
			}
			return nil, nil, nil, err
		}
		rec := s.Snapshot()
		told, open, resolved = append(told, s.ID()), rec.Blockers, rec.ResolvedBlockers[min(len(before), len(rec.ResolvedBlockers)):]
	}
	return told, open, resolved, nil
}

// CheckpointSession implements ipc.Sessions.
func (d *Service) CheckpointSession(ctx context.Context, c ipc.Caller, id string) (*ipc.CheckpointResult, error) {
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
func (d *Service) SessionHandoff(ctx context.Context, c ipc.Caller, id string) (*ipc.Handoff, error) {
	s, err := d.reg.Lookup(c, id)
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

// Follow waits until the session id and every restart of its chain have
// ended, and returns the record of the last one.
func (d *Service) Follow(ctx context.Context, c ipc.Caller, id string) (*ipc.Session, error) {
	s, err := d.reg.Lookup(c, id)
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
		if pending, settled := d.restarts.Pending(s.ID()); pending {
			select {
			case <-settled:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if ns := d.reg.Get(d.reg.Successor(s.ID())); ns != nil {
			s = ns
			continue
		}
		rec := s.Snapshot()
		return &rec, nil
	}
}

// parseGrace reads a stop's grace: -1 for none given (the spec's).
func parseGrace(arg string) (time.Duration, error) {
	if arg == "" {
		return -1, nil
	}
	g, err := config.ParseDuration(arg)
	if err != nil {
		return 0, ipc.BadRequest("grace: %w", err)
	}
	if g.Duration < 0 {
		return 0, ipc.BadRequest("grace: want a duration of 0 or more, got %q", arg)
	}
	return g.Duration, nil
}

// userOfProject is the user a root caller's start in dir runs as: the
// directory's owner when that is another user (nil: the caller itself,
// and always for a daemon that is not root).
func (d *Service) userOfProject(c ipc.Caller, dir string) (*state.Owner, error) {
	if !c.Root() || os.Geteuid() != 0 {
		return nil, nil
	}
	fi, err := state.FilesOf(nil).Stat(dir)
	if err != nil {
		return nil, ipc.BadRequest("%w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == c.UID {
		return nil, nil
	}
	u, err := state.LookupOwner(int(st.Uid))
	if err != nil {
		return nil, ipc.Conflict("%s belongs to uid %d, as whom a session there would run: %v", dir, st.Uid, err)
	}
	return u, nil
}
