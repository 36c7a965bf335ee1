// Package sessions is the sessions API (ipc.Sessions) and the terminals
// API (ipc.Terminals): it resolves a start's spec and launches the session
// (the registry's entry and the actor, package session), stops, restarts
// and removes sessions, passes requests to their actors, keeps the history
// within history_limit, recovers the sessions of an earlier daemon, and is
// the Launcher of the restart policy (package restart).
package sessions

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/notify"
	"github.com/sessiond/sessiond/daemon/registry"
	"github.com/sessiond/sessiond/daemon/restart"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/daemon/worktree"
	"github.com/sessiond/sessiond/ipc"
)

// Notifications is what a start and a recovery tell the notifications:
// the project's rules to use from now on.
type Notifications interface {
	LoadProject(p *state.Project)
}

// Options are what the sessions service is built from.
type Options struct {
	Config   *config.Config
	Log      *zap.Logger
	Registry *registry.Registry
	// Deps are the services every session uses; the service sets their
	// Live and OnEnd.
	Deps          *session.Deps
	Worktrees     *worktree.Service
	Notifications Notifications
	// Events is where the restart policy's events go.
	Events restart.Publisher
	// Relax is told of a run of n ends at once (a stop of many, a
	// shutdown); what it returns is called once the run is over. Nil:
	// nothing is done.
	Relax func(n int) (restore func())
}

// Service is the sessions API and the terminals API.
type Service struct {
	cfg       *config.Config
	log       *zap.Logger
	clock     session.Clock
	reg       *registry.Registry
	deps      *session.Deps
	worktrees *worktree.Service
	notes     Notifications
	restarts  *restart.Restarter
	usage     *usageMeter
	trim      historyTrimmer
	queue     *queue
	relax     func(n int) (restore func())
	// stops is the journal of the stops under way (StopsFile).
	stops *stopJournal

	// starts are the start allowances of the users other than root.
	starts  startLimiter
	closing atomic.Bool
	// finishing are the sessions whose asked restart is being started.
	finishing sync.Map
}

var (
	_ ipc.Sessions     = (*Service)(nil)
	_ ipc.Terminals    = (*Service)(nil)
	_ restart.Launcher = (*Service)(nil)
)

// New returns the sessions service.
func New(opt Options) *Service {
	s := &Service{
		cfg: opt.Config, log: opt.Log, clock: opt.Deps.Clock, reg: opt.Registry, deps: opt.Deps,
		worktrees: opt.Worktrees, notes: opt.Notifications, usage: newUsageMeter(opt.Deps.Clock),
	}
	s.trim.clock = opt.Deps.Clock
	s.starts = startLimiter{clock: opt.Deps.Clock, perMinute: opt.Config.MaxStartsPerMinutePerUser}
	s.restarts = restart.New(s, opt.Events, opt.Deps.Clock, opt.Log.Named("restart"))
	opt.Deps.Live = s.reg.IsLive
	s.stops = newStopJournal(filepath.Join(opt.Config.StateDir, StopsFile))
	opt.Deps.Stops = s.stops
	opt.Deps.OnEnd = s.ended
	opt.Deps.OnLimit = s.limited
	s.queue = newQueue(s)
	if s.relax = opt.Relax; s.relax == nil {
		s.relax = func(int) func() { return func() {} }
	}
	return s
}

// ended runs on an ended session's goroutine, its end on disk: the
// worktree's port is let go, the restart policy applies, and the oldest
// ended sessions beyond history_limit go.
func (s *Service) ended(sess *session.Session) {
	s.reg.Release(sess)
	s.worktrees.Release(sess.Snapshot())
	s.queue.kick()
	if !s.closing.Load() {
		s.continueLater(sess)
		s.restarts.Consider(sess)
		if sess.Loaded() {
			// A restart an earlier daemon was asked for and did not start.
			go s.finishRestart(sess)
		}
	}
	s.trimSoon()
}

// Close refuses new sessions and restarts from now on, drops the pending
// restarts and waits, until ctx ends, for those being launched.
func (s *Service) Close(ctx context.Context) {
	s.closing.Store(true)
	s.queue.stop()
	s.restarts.Close(ctx)
}

// MaxGrace is the longest stop grace of the live sessions: what a
// shutdown that stops them all must allow for.
func (s *Service) MaxGrace() time.Duration {
	grace := time.Duration(0)
	for _, sess := range s.reg.Live("") {
		grace = max(grace, sess.Spec().StopGrace.Duration)
	}
	return grace
}

// EndAll stops (or, with leave, leaves running for the next daemon) every
// live session and waits until each one's goroutine is done: with stop,
// every end is on disk. A signal on hurry cuts the remaining grace
// periods.
func (s *Service) EndAll(ctx context.Context, leave bool, hurry <-chan struct{}) {
	live := s.reg.Live("")
	if !leave {
		defer s.relax(len(live))()
	}
	for _, sess := range live {
		go func() {
			if leave || sess.State() == ipc.StateQueued {
				// A queued session waits on for the next daemon.
				_ = sess.Leave(ctx)
				return
			}
			_ = sess.Stop(ctx, session.Interrupted, -1)
		}()
	}
	for _, sess := range live {
		select {
		case <-sess.Exited():
			continue
		case <-hurry:
			s.log.Warn("second signal: killing sessions now; their handoffs are still written")
			for _, sess := range live {
				go func() { _ = sess.Stop(ctx, session.Interrupted, 0) }()
			}
			hurry = nil
		case <-ctx.Done():
			return
		}
		select {
		case <-sess.Exited():
		case <-ctx.Done():
			return
		}
	}
}

// LiveSubject implements notify.Sessions: the live session of uid (any
// user's, for root) in the project dir.
func (s *Service) LiveSubject(dir string, uid int) (notify.Subject, bool) {
	for _, sess := range s.reg.Live(dir) {
		if uid == 0 || sess.UID() == uid {
			return s.Subject(sess.ID(), true)
		}
	}
	return notify.Subject{}, false
}

// Subject implements notify.Sessions: what a notification tells of the
// session id.
func (s *Service) Subject(id string, full bool) (notify.Subject, bool) {
	sess := s.reg.Get(id)
	if sess == nil {
		return notify.Subject{}, false
	}
	rec := sess.Snapshot()
	sub := notify.Subject{Rec: rec, Owner: sess.Owner(), OnWarning: sess.Spec().OnWarning, LogPath: sess.LogPath()}
	if full {
		sub.Env, sub.HandoffFile = sess.NotifyEnv(&rec), sess.HandoffFile(&rec)
	}
	return sub, true
}
