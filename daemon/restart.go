package daemon

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

// Restart backoff: exponential from restartBackoffMin to restartBackoffMax.
const (
	restartBackoffMin = time.Second
	restartBackoffMax = time.Minute
)

// shouldRestart applies the spec's restart policy to an end reason. An
// explicit stop (interrupted) never restarts.
func shouldRestart(policy, reason string) bool {
	switch policy {
	case config.RestartAlways:
		return reason != ipc.EndInterrupted
	case config.RestartOnFailure:
		return reason == ipc.EndError || reason == ipc.EndCrashed
	}
	return false
}

// restartDelay is the backoff before restart number n (1-based) in a window.
func restartDelay(n int) time.Duration {
	d := restartBackoffMin
	for i := 1; i < n && d < restartBackoffMax; i++ {
		d *= 2
	}
	return min(d, restartBackoffMax)
}

// maybeRestart starts the session again after a backoff, when its policy
// says so and it has not restarted max_restarts times within
// restart_window.
func (d *Daemon) maybeRestart(s *session, reason string) {
	if d.closing.Load() || !shouldRestart(s.spec.Restart, reason) {
		return
	}
	if rec := s.snapshot(); reason == ipc.EndError && s.spec.Restart == config.RestartOnFailure && rec.ExitCode == nil && rec.Signal == "" {
		// An adopted session's exit status is unknown: it may well have
		// completed, so on-failure does not restart it.
		s.log.Info("not restarted: exit status unknown (adopted session)")
		return
	}
	now := time.Now()
	var recent []time.Time
	for _, t := range s.restartTimes {
		if now.Sub(t) < s.spec.RestartWindow.Duration {
			recent = append(recent, t)
		}
	}
	if len(recent) >= s.spec.MaxRestarts {
		msg := fmt.Sprintf("not restarted: %d restarts within %s (max_restarts)", len(recent), s.spec.RestartWindow)
		s.log.Warn(msg)
		s.emit(ipc.EventFailed, msg, nil)
		return
	}
	delay := restartDelay(len(recent) + 1)
	rec := s.snapshot()
	times := append(recent, now)
	d.restartMu.Lock()
	defer d.restartMu.Unlock()
	if d.closing.Load() {
		return
	}
	t := time.AfterFunc(delay, func() {
		d.restartMu.Lock()
		delete(d.restarts, s.id)
		d.restartMu.Unlock()
		if d.closing.Load() {
			return
		}
		ns, _, err := d.launch(s.uid, s.projectDir, s.spec, rec.Name, s.id, rec.Restarts+1, rec.EnvKeys, times)
		if err != nil {
			s.log.Warn("restart failed", zap.Error(err))
			s.emit(ipc.EventFailed, "restart failed: "+err.Error(), nil)
			return
		}
		ns.emit(ipc.EventRestarted, fmt.Sprintf("restart %d of %s (%s)", rec.Restarts+1, s.id, reason), map[string]any{"restart_of": s.id})
	})
	d.restarts[s.id] = t
	s.log.Info("restarting", zap.Duration("in", delay), zap.String("reason", reason))
}

// cancelRestarts drops pending restarts (daemon shutdown).
func (d *Daemon) cancelRestarts() {
	d.restartMu.Lock()
	defer d.restartMu.Unlock()
	for id, t := range d.restarts {
		t.Stop()
		delete(d.restarts, id)
	}
}
