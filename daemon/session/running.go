package session

import (
	"fmt"
	"slices"
	"time"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/ipc"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// supervise begins the running phase: the timeline armed, the child's exit
// a wake-up.
func (s *Session) supervise() {
	s.phase = phaseRunning
	s.scheduleRead()
	s.resetTimeline()
	s.arm(&s.sv)
	s.child.OnExit(s.kick)
}

// stepRunning is the running session's step.
func (s *Session) stepRunning(ev event) {
	sv := &s.sv
	switch ev.what {
	case gotExit:
		exit := s.child.Exit()
		s.beginEnd(s.exitReason(exit), exit)
		return
	case gotAlarm:
		s.onAlarm(sv)
	case gotTick:
		s.scheduledCheckpoint()
	case gotCheckpoint:
		s.checkpointDone(*ev.ckpt)
		if s.leaving && !s.ckpt.busy {
			s.leave()
			return
		}
	case gotRequest:
		s.onRequest(ev.req)
	}
	if s.phase == phaseRunning && s.recDirty && sv.flush == nil {
		sv.flushAt = s.deps.Clock.Now().Add(agentFlush)
		sv.flush = s.deps.Clock.AfterFunc(agentFlush, s.alarm)
	}
}

// onRequest handles a request to the running session.
func (s *Session) onRequest(req request) {
	if s.leaving {
		req.refuse(ipc.Conflict("session %s is being left running for the next daemon", s.id))
		return
	}
	switch r := req.(type) {
	case *stopRequest:
		r.reply <- nil
		s.beginAskedStop(r)
	case *leaveRequest:
		r.reply <- nil
		s.beginLeave()
	case *extendRequest:
		rec, err := s.extend(r.by, r.byAgent || (r.pid > 0 && s.owns(r.pid)))
		r.reply <- result[ipc.Session]{rec, err}
		s.arm(&s.sv)
	case *hookRequest:
		resp, spent, err := s.agentEvent(r.payload)
		r.reply <- result[ipc.AgentHookResponse]{resp, err}
		if spent {
			s.beginStop(Budget, -1)
			return
		}
		if s.takeLimitStop() {
			return
		}
		s.arm(&s.sv)
	case *signalRequest:
		r.reply <- s.signal(r.sig)
	case *reportRequest:
		rep, err := s.report(r)
		r.reply <- result[ipc.Report]{rep, err}
	case *checkpointRequest:
		// Whoever asks, a checkpoint is the spec's (its mode, its
		// maximum file, its ignores) and joins one under way.
		s.requestCheckpoint(r)
	case *memoryRequest:
		s.warnMemory(r.why)
	}
}

// supervision is what the running session keeps between two wakes: the
// timeline's timer, when it fires and what for, and the timer that flushes
// what an agent's events left unwritten (armed only then, so that an idle
// session has no timer but its deadline's).
type supervision struct {
	tm      Timer
	at      time.Time
	what    due
	flush   Timer
	flushAt time.Time
}

func (sv *supervision) stop() {
	if sv.tm != nil {
		sv.tm.Stop()
		sv.tm = nil
	}
	if sv.flush != nil {
		sv.flush.Stop()
		sv.flush = nil
	}
}

// onAlarm acts on the timers that are due. A timer stopped as it fired
// finds nothing due.
func (s *Session) onAlarm(sv *supervision) {
	now := s.deps.Clock.Now()
	if sv.flush != nil && !now.Before(sv.flushAt) {
		sv.flush = nil
		if s.recDirty {
			_ = s.commit()
		}
	}
	if sv.tm != nil && !now.Before(sv.at) {
		if s.onDue(sv.what) {
			return
		}
		s.arm(sv)
	}
}

// arm replaces the timeline's timer with one for its next due moment.
func (s *Session) arm(sv *supervision) {
	if sv.tm != nil {
		sv.tm.Stop()
	}
	at, what := s.timeline.next(s.lastActivity())
	now := s.deps.Clock.Now()
	d := at.Sub(now)
	// sv.at carries now's monotonic reading: a wall clock set back does
	// not hold the timer's due moment off.
	sv.at, sv.what = now.Add(d), what
	sv.tm = s.deps.Clock.AfterFunc(d, s.alarm)
}

// onDue acts on the timeline's due moment; true when the session began to
// stop.
func (s *Session) onDue(what due) bool {
	switch what {
	case dueWarn:
		s.timeline.warned, s.rec.DeadlineWarned = true, true
		s.warn()
	case dueDeadline:
		s.beginStop(Timeout, -1)
		return true
	case dueIdle:
		if a := s.rec.Agent; a != nil && a.State == ipc.AgentLimited && a.Limit != nil && a.Limit.Continue != ipc.ContinueNone {
			// A session waiting for its limit to reset is not idle.
			s.timeline.progressAt = s.deps.Clock.Now()
			s.onOutput(s.deps.Clock.Now())
			break
		}
		if s.timeline.idleFor(s.lastActivity(), s.deps.Clock.Now()) {
			s.beginStop(Idle, -1)
			return true
		}
	case dueWaitWarn:
		s.timeline.waitWarned = true
		s.warnWaiting()
	case dueWaiting:
		s.beginStop(Waiting, -1)
		return true
	case dueRead:
		s.timeline.readAt = time.Time{}
		if s.pollTranscript() {
			s.beginStop(Budget, -1)
			return true
		}
		if s.takeLimitStop() {
			return true
		}
	case dueContinue:
		s.timeline.continueAt = time.Time{}
		s.continueAfterLimit()
	case dueStall:
		s.checkStall()
	}
	return false
}

// resetTimeline sets the timeline from the record and the spec.
func (s *Session) resetTimeline() {
	s.timeline = timeline{
		deadline: s.rec.Deadline, warnAt: s.rec.WarnAt, warnBefore: s.spec.WarnBefore.Duration,
		warned: s.rec.DeadlineWarned ||
			// A record of a daemon that kept no DeadlineWarned: the last
			// warning's.
			s.rec.State == ipc.StateWarned && (s.rec.Warning == nil || s.rec.Warning.Reason != warnWaiting && s.rec.Warning.Reason != warnBudget && s.rec.Warning.Reason != warnMemory && s.rec.Warning.Reason != warnStalled),
		idle:        s.spec.IdleTimeout.Duration,
		waitTimeout: s.spec.WaitingTimeout.Duration, waitingSince: s.timeline.waitingSince,
		// The waiting warning given for this wait, before a daemon's
		// restart, is not given again.
		waitWarned: !s.timeline.waitingSince.IsZero() && s.rec.Warning != nil && s.rec.Warning.Reason == warnWaiting && !s.rec.Warning.At.Before(s.timeline.waitingSince),
		readAt:     s.timeline.readAt, continueAt: s.timeline.continueAt,
		stall: s.spec.StallTimeout.Duration, progressAt: s.timeline.progressAt, stalled: s.timeline.stalled,
	}
	if s.timeline.progressAt.IsZero() {
		s.timeline.progressAt = s.deps.Clock.Now()
	}
}

func (s *Session) signal(sig unix.Signal) error {
	if err := s.signalGroup(sig); err != nil {
		return fmt.Errorf("signal session %s: %w", s.id, err)
	}
	return nil
}

// procs returns the session's live processes, the leader first.
func (s *Session) procs() []proc.Process {
	out := []proc.Process{s.child.Process()}
	for _, p := range proc.SessionProcs(s.id, s.child, !s.adopted) {
		if p.PID != s.child.PID {
			out = append(out, p)
		}
	}
	return out
}

// owns reports whether pid is a process of the session.
func (s *Session) owns(pid int) bool {
	return slices.ContainsFunc(s.procs(), func(p proc.Process) bool { return p.PID == pid })
}

// beginLeave lets the session run on without this daemon, once the
// checkpoint being taken is in: what watches it is released, nothing of
// the session is ended.
func (s *Session) beginLeave() {
	s.leaving = true
	if s.unschedule != nil {
		s.unschedule()
		s.unschedule = nil
	}
	if !s.ckpt.busy {
		s.leave()
	}
}

func (s *Session) leave() {
	for _, r := range s.ckpt.waiting {
		r.refuse(ipc.Conflict("session %s is being left running for the next daemon", s.id))
	}
	s.ckpt.waiting = nil
	if s.unwatchLog != nil {
		s.unwatchLog()
	}
	if s.watch != nil {
		_ = s.watch.Close()
	}
	s.releaseTerminal()
	s.logger().Info("leaving session running for adoption", zap.Int("pid", s.child.PID))
	s.phase = phaseOver
}
