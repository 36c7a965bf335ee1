package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// restarter holds the pending restarts, so that shutdown cancels them and
// waits for one that is starting.
type restarter struct {
	d  *Daemon
	mu sync.Mutex
	// pending are the timers of restarts to come, by ended session id.
	pending map[string]*time.Timer
	// running counts restarts being launched.
	running sync.WaitGroup
	// successor maps an ended session to the one that restarted it, and
	// changed is closed (and replaced) whenever a restart settles.
	successor map[string]string
	changed   chan struct{}
}

func newRestarter(d *Daemon) *restarter {
	return &restarter{d: d, pending: map[string]*time.Timer{}, successor: map[string]string{}, changed: make(chan struct{})}
}

// settle records how a pending restart of old ended (next is "" when it
// did not start) and wakes those who follow the chain.
func (r *restarter) settle(old, next string) {
	r.mu.Lock()
	if next != "" {
		r.successor[old] = next
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// successorOf returns the session that restarted id, if any.
func (r *restarter) successorOf(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.successor[id]
}

// next says what follows the ended session id: a restart to come (wait on
// changed), the session that restarted it, or nothing.
func (r *restarter) next(id string) (pending bool, successor string, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, pending = r.pending[id]
	return pending, r.successor[id], r.changed
}

// consider applies the restart policy to a session that ended.
func (r *restarter) consider(s *session.Session) {
	rec := s.Snapshot()
	if rec.State != ipc.StateEnded {
		return
	}
	log := r.d.log.With(zap.String("session", s.ID()))
	exitKnown := rec.ExitCode != nil || rec.Signal != ""
	dec := session.RestartDecision(s.Spec(), session.Reason(rec.EndReason), exitKnown, s.RestartHistory(), r.d.deps.Clock.Now())
	if !dec.Yes {
		if dec.Why != "" {
			log.Warn(dec.Why)
		}
		if dec.Limited {
			r.d.bus.Publish(ipc.Event{Type: ipc.EventFailed, SessionID: s.ID(), ProjectID: rec.ProjectID, UID: s.UID(), Message: dec.Why, Time: time.Now(),
				Data: []byte(`{"` + restartLimitKey + `":true}`)})
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.d.closing.Load() {
		return
	}
	r.pending[s.ID()] = time.AfterFunc(dec.Delay, func() {
		r.mu.Lock()
		_, ok := r.pending[s.ID()]
		delete(r.pending, s.ID())
		if ok {
			r.running.Add(1)
		}
		r.mu.Unlock()
		if !ok {
			return
		}
		defer r.running.Done()
		r.settle(s.ID(), r.restart(s, rec, dec.History))
	})
	log.Info("restarting", zap.Duration("in", dec.Delay), zap.String("reason", rec.EndReason))
}

// restart starts the session again with the same spec in the same project
// and returns the new session's id ("" when it did not start).
func (r *restarter) restart(old *session.Session, rec ipc.Session, history []time.Time) string {
	if r.d.closing.Load() {
		return ""
	}
	if old.Project() == nil {
		r.d.log.Warn("restart failed: the project is unreachable", zap.String("session", old.ID()))
		return ""
	}
	ns, _, err := r.d.launch(launchParams{
		UID: old.UID(), Project: old.Project(), Owner: old.Owner(), Spec: old.Spec(), Name: rec.Name, EnvKeys: rec.EnvKeys,
		RestartOf: old.ID(), Restarts: rec.Restarts + 1, RestartHistory: history, Resume: restartResume(old, false), Worktree: rec.Worktree,
	})
	if err != nil {
		r.d.log.Warn("restart failed", zap.String("session", old.ID()), zap.Error(err))
		r.d.bus.Publish(ipc.Event{Type: ipc.EventFailed, SessionID: old.ID(), ProjectID: rec.ProjectID, UID: old.UID(),
			Message: "restart failed: " + err.Error(), Time: time.Now()})
		if ns == nil {
			return ""
		}
		return ns.ID()
	}
	r.d.bus.Publish(ipc.Event{Type: ipc.EventRestarted, SessionID: ns.ID(), ProjectID: rec.ProjectID, UID: old.UID(),
		Message: fmt.Sprintf("restart %d of %s (%s)", rec.Restarts+1, old.ID(), rec.EndReason),
		Data:    []byte(fmt.Sprintf(`{"restart_of":%q}`, old.ID())), Time: time.Now()})
	return ns.ID()
}

// cancelAll drops the pending restarts and waits for those being launched.
func (r *restarter) cancelAll(ctx context.Context) {
	r.mu.Lock()
	for id, t := range r.pending {
		t.Stop()
		delete(r.pending, id)
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
