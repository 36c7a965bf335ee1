package session

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// warn gives the session its warning: file, state, event, hook and, only
// when the spec asks, the signal to the processes that catch it (DESIGN §6).
func (s *Session) warn() {
	now := s.deps.Clock.Now()
	deadline := s.timeline.deadline
	// In-band first, so that an agent woken by the signal finds the file
	// and its state already warned.
	s.writeWarningFile(deadline, now)
	w := ipc.Warning{At: now, Hook: s.spec.OnWarning, Signal: s.spec.WarnSignal.Name}
	s.rec.State = ipc.StateWarned
	s.rec.Warning = &w
	_ = s.commit()
	// The event runs the on_warning hook: it is a notification rule of the
	// session's (daemon/notifications.go), queued, never in the way.
	s.emit(ipc.EventWarned, ipc.WarningText(deadline, now), w)
	if sig := s.spec.WarnSignal; sig.Num != 0 {
		for _, pid := range s.procs() {
			if !s.spec.WarnSignalForce {
				catches, err := proc.Catches(pid, sig.Num)
				if err != nil {
					w.Skipped = append(w.Skipped, ipc.SkippedProc{PID: pid, Reason: err.Error()})
					continue
				}
				if !catches {
					w.Skipped = append(w.Skipped, ipc.SkippedProc{PID: pid, Reason: "does not catch " + sig.Name + " (it would die)"})
					continue
				}
			}
			if err := proc.Signal(pid, sig.Num); err != nil {
				w.Skipped = append(w.Skipped, ipc.SkippedProc{PID: pid, Reason: err.Error()})
				continue
			}
			w.Signaled = append(w.Signaled, pid)
		}
		s.rec.Warning = &w
		_ = s.commit()
	}
	s.log.Info("session warned", zap.Time("deadline", deadline), zap.Ints("signaled", w.Signaled))
}

func (s *Session) writeWarningFile(deadline, now time.Time) {
	left := deadline.Sub(now).Round(time.Second)
	w := &state.Warning{SessionID: s.id, WarnedAt: now, Deadline: deadline,
		TimeLeftSeconds: int64(left / time.Second), Message: ipc.WarningText(deadline, now)}
	if err := s.proj.WriteWarning(w); err != nil {
		s.log.Warn("write warning file", zap.Error(err))
	}
}

// extend moves the deadline and the warning later; a warning already given
// is given again at the new time.
func (s *Session) extend(by time.Duration) (ipc.Session, error) {
	if by <= 0 {
		return ipc.Session{}, ipc.BadRequest("extend by %s: want a positive duration", by)
	}
	now := s.deps.Clock.Now()
	s.timeline = s.timeline.extend(by, now)
	s.rec.Deadline, s.rec.WarnAt = s.timeline.deadline, s.timeline.warnAt
	if s.rec.State == ipc.StateWarned && !s.timeline.warned {
		s.rec.State = ipc.StateRunning
	}
	_ = s.commit()
	if s.rec.State == ipc.StateWarned {
		s.writeWarningFile(s.rec.Deadline, now)
	} else if err := s.proj.RemoveWarning(); err != nil {
		s.log.Warn("remove warning file", zap.Error(err))
	}
	s.emit(ipc.EventExtended, fmt.Sprintf("deadline moved to %s", s.rec.Deadline.Format(time.RFC3339)),
		map[string]any{"deadline": s.rec.Deadline, "warn_at": s.rec.WarnAt})
	return s.Snapshot(), nil
}
