package session

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// What a warning is for (ipc.Warning.Reason).
const (
	warnDeadline = ipc.WarnDeadline
	warnWaiting  = ipc.WarnWaiting
	warnBudget   = ipc.WarnBudget
	warnMemory   = ipc.WarnMemory
	warnStalled  = ipc.WarnStalled
)

// warning is one warning to give: what for, when the session will be
// stopped (for the warning file) and the words an agent reads.
type warning struct {
	reason   string
	deadline time.Time
	text     string
}

// warn gives the session its deadline's warning.
func (s *Session) warn() {
	deadline := s.timeline.deadline
	s.give(warning{reason: warnDeadline, deadline: deadline, text: ipc.WarningText(deadline, s.deps.Clock.Now())})
}

// give gives the session a warning, whatever it is for: file, state, event,
// hook, the agent's own conversation and, only when the spec asks, the
// signal to the processes that catch it (DESIGN §6).
func (s *Session) give(wn warning) {
	now := s.deps.Clock.Now()
	deadline := wn.deadline
	// In-band first, so that an agent woken by the signal finds the file
	// and its state already warned; the state before the file, so that
	// one who sees the file and asks finds the session warned.
	w := ipc.Warning{At: now, Reason: wn.reason, Hook: s.spec.OnWarning, Signal: s.spec.WarnSignal.Name}
	s.rec.State = ipc.StateWarned
	s.rec.Warning = &w
	s.publish()
	s.writeWarning(deadline, now, wn.text)
	if s.agent != nil {
		s.agent.context = wn.text
	}
	_ = s.commit()
	// The event runs the on_warning hook: it is a notification rule of the
	// session's (daemon/notifications.go), queued, never in the way.
	s.emit(ipc.EventWarned, wn.text, w)
	if sig := s.spec.WarnSignal; sig.Num != 0 {
		for _, p := range s.procs() {
			pid := p.PID
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
			if err := p.Signal(sig.Num); err != nil {
				w.Skipped = append(w.Skipped, ipc.SkippedProc{PID: pid, Reason: err.Error()})
				continue
			}
			w.Signaled = append(w.Signaled, pid)
		}
		s.rec.Warning = &w
		_ = s.commit()
	}
	s.logger().Info("session warned", zap.String("reason", wn.reason), zap.Time("deadline", deadline), zap.Ints("signaled", w.Signaled))
}

func (s *Session) writeWarningFile(deadline, now time.Time) {
	s.writeWarning(deadline, now, ipc.WarningText(deadline, now))
}

func (s *Session) writeWarning(deadline, now time.Time, text string) {
	left := deadline.Sub(now).Round(time.Second)
	w := &state.Warning{SessionID: s.id, WarnedAt: now, Deadline: deadline,
		TimeLeftSeconds: int64(left / time.Second), Message: text}
	if err := s.proj.WriteWarning(w); err != nil {
		s.logger().Warn("write warning file", zap.Error(err))
	}
}

// maxDeadlineAhead is as far ahead as an extension may move a deadline:
// extensions add up, and a time past the year 9999 has no RFC 3339 form
// for the record and the listing.
const maxDeadlineAhead = 100 * 365 * 24 * time.Hour

// extend moves the deadline and the warning later; a warning already given
// is given again at the new time.
func (s *Session) extend(by time.Duration, byAgent bool) (ipc.Session, error) {
	if by <= 0 {
		return ipc.Session{}, ipc.BadRequest("extend by %s: want a positive duration", by)
	}
	now := s.deps.Clock.Now()
	if to := s.timeline.deadline.Add(by); to.Sub(now) > maxDeadlineAhead {
		return ipc.Session{}, ipc.BadRequest("extend by %s: the deadline would be %s, more than 100 years from now", by, to.UTC().Format("2006-01-02"))
	}
	if byAgent {
		// The agent may move its own deadline only within what the spec
		// grants it, all its extensions together.
		var used time.Duration
		if s.rec.Agent != nil {
			used = time.Duration(s.rec.Agent.ExtendedSeconds) * time.Second
		}
		limit := s.spec.AgentMayExtend.Duration
		if limit <= 0 {
			return ipc.Session{}, ipc.Conflict("extension refused: the spec grants the agent no extension (agent_may_extend)")
		}
		if used+by > limit {
			return ipc.Session{}, ipc.Conflict("extension refused: %s asked, %s of agent_may_extend %s left", by, max(limit-used, 0), limit)
		}
		if s.rec.Agent == nil {
			s.rec.Agent = &ipc.Agent{Name: "generic", State: ipc.AgentUnknown}
		}
		s.rec.Agent.ExtendedSeconds += int64(by / time.Second)
	}
	s.timeline = s.timeline.extend(by, now)
	s.rec.Deadline, s.rec.WarnAt, s.rec.DeadlineWarned = s.timeline.deadline, s.timeline.warnAt, s.timeline.warned
	deadlineWarning := s.rec.Warning == nil || s.rec.Warning.Reason == "" || s.rec.Warning.Reason == warnDeadline
	if s.rec.State == ipc.StateWarned && !s.timeline.warned && deadlineWarning {
		s.rec.State = ipc.StateRunning
	}
	_ = s.commit()
	if s.rec.State == ipc.StateWarned && deadlineWarning {
		s.writeWarningFile(s.rec.Deadline, now)
	} else if s.rec.State != ipc.StateWarned {
		if err := s.proj.RemoveWarning(); err != nil {
			s.logger().Warn("remove warning file", zap.Error(err))
		}
	}
	s.emit(ipc.EventExtended, fmt.Sprintf("deadline moved to %s", s.rec.Deadline.Format(time.RFC3339)),
		map[string]any{"deadline": s.rec.Deadline, "warn_at": s.rec.WarnAt})
	return s.Snapshot(), nil
}
