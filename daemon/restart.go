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
}

func newRestarter(d *Daemon) *restarter {
	return &restarter{d: d, pending: map[string]*time.Timer{}}
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
			r.d.bus.Publish(ipc.Event{Type: ipc.EventFailed, SessionID: s.ID(), ProjectID: rec.ProjectID, UID: s.UID(), Message: dec.Why, Time: time.Now()})
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
		r.restart(s, rec, dec.History)
	})
	log.Info("restarting", zap.Duration("in", dec.Delay), zap.String("reason", rec.EndReason))
}

// restart starts the session again with the same spec in the same project.
func (r *restarter) restart(old *session.Session, rec ipc.Session, history []time.Time) {
	if r.d.closing.Load() {
		return
	}
	ns, _, err := r.d.launch(launchParams{
		UID: old.UID(), Dir: old.ProjectDir(), Spec: old.Spec(), Name: rec.Name, EnvKeys: rec.EnvKeys,
		RestartOf: old.ID(), Restarts: rec.Restarts + 1, RestartHistory: history,
	})
	if err != nil {
		r.d.log.Warn("restart failed", zap.String("session", old.ID()), zap.Error(err))
		r.d.bus.Publish(ipc.Event{Type: ipc.EventFailed, SessionID: old.ID(), ProjectID: rec.ProjectID, UID: old.UID(),
			Message: "restart failed: " + err.Error(), Time: time.Now()})
		return
	}
	r.d.bus.Publish(ipc.Event{Type: ipc.EventRestarted, SessionID: ns.ID(), ProjectID: rec.ProjectID, UID: old.UID(),
		Message: fmt.Sprintf("restart %d of %s (%s)", rec.Restarts+1, old.ID(), rec.EndReason),
		Data:    []byte(fmt.Sprintf(`{"restart_of":%q}`, old.ID())), Time: time.Now()})
}

// cancelAll drops the pending restarts and waits for those being launched.
func (r *restarter) cancelAll(ctx context.Context) {
	r.mu.Lock()
	for id, t := range r.pending {
		t.Stop()
		delete(r.pending, id)
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
