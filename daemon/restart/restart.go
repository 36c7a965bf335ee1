// Package restart applies the restart policy to sessions that ended: the
// spec's restart, within max_restarts per restart_window, after an
// exponential backoff read off the daemon's clock. The successor is
// started through a Launcher; the chain it makes is the records' (each
// successor's restart_of), not this package's.
package restart

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// Launcher starts a session's successor.
type Launcher interface {
	// Relaunch starts old's spec again in its project as its successor,
	// with history the times of the chain's restarts; it returns the new
	// session's id, "" when none was made.
	Relaunch(old *session.Session, history []time.Time) (string, error)
}

// Publisher sends events to the event stream.
type Publisher interface {
	Publish(ev ipc.Event)
}

// Restarter holds the pending restarts, so that shutdown cancels them and
// waits for one that is starting.
type Restarter struct {
	launch Launcher
	events Publisher
	clock  session.Clock
	log    *zap.Logger

	mu sync.Mutex
	// pending are the timers of restarts to come, by ended session id.
	pending map[string]session.Timer
	// running counts restarts being launched.
	running sync.WaitGroup
	// settled is closed (and replaced) whenever a pending restart settles.
	settled chan struct{}
	closed  bool
}

// New returns a restarter that launches through l.
func New(l Launcher, events Publisher, clock session.Clock, log *zap.Logger) *Restarter {
	return &Restarter{launch: l, events: events, clock: clock, log: log, pending: map[string]session.Timer{}, settled: make(chan struct{})}
}

// Pending reports whether a restart of the ended session id is to come,
// and returns a channel closed once a pending restart settles.
func (r *Restarter) Pending(id string) (bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pending[id]
	return ok, r.settled
}

// Consider applies the restart policy to a session that ended.
func (r *Restarter) Consider(s *session.Session) {
	rec := s.Snapshot()
	if rec.State != ipc.StateEnded {
		return
	}
	exitKnown := rec.ExitCode != nil || rec.Signal != ""
	dec := session.RestartDecision(s.Spec(), session.Reason(rec.EndReason), exitKnown, s.RestartHistory(), r.clock.Now())
	if !dec.Yes {
		if dec.Why != "" {
			r.log.Warn(dec.Why, zap.String("session", s.ID()))
		}
		if dec.Limited {
			r.events.Publish(ipc.Event{Type: ipc.EventFailed, SessionID: s.ID(), ProjectID: rec.ProjectID, UID: s.UID(), Message: dec.Why, Time: r.clock.Now(),
				Data: []byte(`{"` + ipc.RestartLimitKey + `":true}`)})
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.pending[s.ID()] = r.clock.AfterFunc(dec.Delay, func() { r.fire(s, rec, dec.History) })
	r.log.Info("restarting", zap.String("session", s.ID()), zap.Duration("in", dec.Delay), zap.String("reason", rec.EndReason))
}

// fire launches the restart of old that was pending, unless it was
// cancelled meanwhile.
func (r *Restarter) fire(old *session.Session, rec ipc.Session, history []time.Time) {
	r.mu.Lock()
	_, ok := r.pending[old.ID()]
	delete(r.pending, old.ID())
	if ok {
		r.running.Add(1)
	}
	r.mu.Unlock()
	if !ok {
		return
	}
	defer r.running.Done()
	defer r.settle()
	id, err := r.launch.Relaunch(old, history)
	if err != nil {
		r.log.Warn("restart failed", zap.String("session", old.ID()), zap.Error(err))
		r.events.Publish(ipc.Event{Type: ipc.EventFailed, SessionID: old.ID(), ProjectID: rec.ProjectID, UID: old.UID(),
			Message: "restart failed: " + err.Error(), Time: r.clock.Now()})
		return
	}
	r.events.Publish(ipc.Event{Type: ipc.EventRestarted, SessionID: id, ProjectID: rec.ProjectID, UID: old.UID(),
		Message: fmt.Sprintf("restart %d of %s (%s)", rec.Restarts+1, old.ID(), rec.EndReason),
		Data:    []byte(fmt.Sprintf(`{"restart_of":%q}`, old.ID())), Time: r.clock.Now()})
}

// Cancel drops the pending restart of the ended session id, if any, and
// reports whether there was one: a user's stop ends the chain.
func (r *Restarter) Cancel(id string) bool {
	r.mu.Lock()
	t, ok := r.pending[id]
	if ok {
		t.Stop()
		delete(r.pending, id)
	}
	r.mu.Unlock()
	if ok {
		r.settle()
		r.log.Info("restart cancelled by a stop", zap.String("session", id))
	}
	return ok
}

// PendingIDs returns the ended sessions whose restart is to come.
func (r *Restarter) PendingIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.pending))
	for id := range r.pending {
		ids = append(ids, id)
	}
	return ids
}

// settle wakes those who wait for a pending restart.
func (r *Restarter) settle() {
	r.mu.Lock()
	close(r.settled)
	r.settled = make(chan struct{})
	r.mu.Unlock()
}

// Close drops the pending restarts, refuses new ones and waits for those
// being launched, until ctx ends.
func (r *Restarter) Close(ctx context.Context) {
	r.mu.Lock()
	r.closed = true
	for id, t := range r.pending {
		t.Stop()
		delete(r.pending, id)
	}
	r.mu.Unlock()
	r.settle()
	done := make(chan struct{})
	go func() { r.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
