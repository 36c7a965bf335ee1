package session

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/ipc"
)

// Start runs the session: a goroutine starts the command (see start.go),
// then supervises it until it ends. Started says when the command runs or
// the start has failed.
func (s *Session) Start() {
	go func() {
		if err := s.start(); err != nil {
			s.fail(err)
			close(s.exited)
			return
		}
		s.superviseFrom()
	}()
}

// live runs what is left of the session's life, f, and marks the end of
// its course.
func (s *Session) live(f func()) {
	defer close(s.exited)
	f()
}

// Adopt takes over a live session that an earlier daemon started: child is
// its process, still running. The exit status will be unknown.
func (s *Session) Adopt(child *proc.Child) {
	s.child, s.adopted = child, true
	close(s.started)
	go func() {
		s.watchProject()
		s.unwatchLog = s.watchLog()
		if s.term == nil {
			s.warnRecord("adopted after a daemon restart: the exit status will be unknown")
		}
		_ = s.commit()
		s.writeLock()
		s.schedule()
		s.restoreAgent()
		s.logger().Info("adopted live session", zap.Int("pid", child.PID))
		if s.rec.State == ipc.StateStopping {
			// The previous daemon began this stop.
			s.live(func() { s.stop(Reason(s.rec.EndReason), -1) })
			return
		}
		s.superviseFrom()
	}()
}

// Recover ends a session that an earlier daemon recorded as live and whose
// process is gone: its end was not observed (crashed), or, if the earlier
// daemon had recorded the end already, that end is finished.
func (s *Session) Recover() {
	close(s.started)
	go func() {
		defer close(s.exited)
		s.child = proc.Gone(s.rec.PID)
		if s.rec.EndedAt != nil && Reason(s.rec.EndReason).Valid() {
			s.logger().Info("finishing the end an earlier daemon recorded", zap.String("reason", s.rec.EndReason))
			s.finishEnd(Reason(s.rec.EndReason), nil)
			return
		}
		s.ckpt.last = s.startedAt
		s.end(Crashed, proc.Exit{Code: -1})
	}()
}

// The running session is an actor without a goroutine of its own while
// nothing happens to it: an idle session holds its record, its timer and
// its channels, and no stack. Whatever happens to it wakes it (kick): the
// child's exit, its timer (alarm), a checkpoint tick or result, a request
// (send counts its senders in pending). The goroutine kick starts handles
// all that is ready and parks the session again. Until the session
// supervises and once its course has ended, it is never parked, so kicks
// start nothing: its own goroutine (the start, the stop, the end) takes
// what comes from the channels.

// superviseFrom begins the session's supervision on the calling goroutine,
// which returns once the session has nothing left to handle.
func (s *Session) superviseFrom() {
	s.resetTimeline()
	s.arm(&s.sv)
	s.child.OnExit(s.kick)
	s.supervise()
}

// kick wakes the parked session on a new goroutine; it never blocks.
func (s *Session) kick() {
	if s.parked.CompareAndSwap(true, false) {
		go s.supervise()
	}
}

// alarm is the session's timers' function: the timeline or the flush may
// be due.
func (s *Session) alarm() {
	s.alarmed.Store(true)
	s.kick()
}

// ready reports whether something waits to be handled by the session.
func (s *Session) ready() bool {
	if s.pending.Load() > 0 || s.alarmed.Load() || len(s.ticks) > 0 || len(s.ckptDone) > 0 {
		return true
	}
	select {
	case <-s.child.Done():
		return true
	default:
		return false
	}
}

// supervise handles what happened to the running session until nothing
// is left, then parks it; it returns then, or when the session's course
// has ended.
func (s *Session) supervise() {
	for {
		switch s.superviseOnce(&s.sv) {
		case stepEnded:
			s.sv.stop()
			close(s.exited)
			return
		case stepIdle:
			s.parked.Store(true)
			// What came before the session was parked is handled now,
			// unless a kick has already woken it.
			if !s.ready() || !s.parked.CompareAndSwap(true, false) {
				return
			}
		}
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
	}
	if sv.flush != nil {
		sv.flush.Stop()
	}
}

// step is what superviseOnce did.
type step int

const (
	stepMore  step = iota // it handled something; there may be more
	stepIdle              // nothing was ready
	stepEnded             // the session's course has ended
)

// superviseOnce handles one thing that happened to the running session,
// without waiting for any.
func (s *Session) superviseOnce(sv *supervision) step {
	if s.recDirty && sv.flush == nil {
		sv.flushAt = s.deps.Clock.Now().Add(agentFlush)
		sv.flush = s.deps.Clock.AfterFunc(agentFlush, s.alarm)
	}
	if s.alarmed.Swap(false) {
		if s.onAlarm(sv) {
			return stepEnded
		}
		return stepMore
	}
	select {
	case <-s.child.Done():
		s.onExit()
		return stepEnded
	case <-s.ticks:
		s.scheduledCheckpoint()
	case r := <-s.ckptDone:
		s.checkpointDone(*r)
	case m := <-s.inbox:
		rearm, ended := s.onMessage(m)
		if ended {
			return stepEnded
		}
		if rearm {
			s.arm(sv)
		}
	default:
		if s.pending.Load() > 0 {
			// A sender is on its way to the inbox.
			runtime.Gosched()
			return stepMore
		}
		return stepIdle
	}
	return stepMore
}

// onAlarm acts on the timers that are due; true when the session's course
// has ended (it stopped). A timer stopped as it fired finds nothing due.
func (s *Session) onAlarm(sv *supervision) bool {
	now := s.deps.Clock.Now()
	if sv.flush != nil && !now.Before(sv.flushAt) {
		sv.flush = nil
		if s.recDirty {
			_ = s.commit()
		}
	}
	if sv.tm != nil && !now.Before(sv.at) {
		if s.onDue(sv.what) {
			return true
		}
		s.arm(sv)
	}
	return false
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

// onExit ends the session whose command exited.
func (s *Session) onExit() {
	exit := s.child.Exit()
	s.end(s.exitReason(exit), exit)
}

// onDue acts on the timeline's due moment; true when the session's course
// has ended (it stopped).
func (s *Session) onDue(what due) bool {
	switch what {
	case dueWarn:
		s.timeline.warned = true
		s.warn()
	case dueDeadline:
		s.stop(Timeout, -1)
		return true
	case dueIdle:
		if s.timeline.idleFor(s.lastActivity(), s.deps.Clock.Now()) {
			s.stop(Idle, -1)
			return true
		}
	case dueWaitWarn:
		s.timeline.waitWarned = true
		s.warnWaiting()
	case dueWaiting:
		s.stop(Waiting, -1)
		return true
	}
	return false
}

// onMessage handles a request to a running session: rearm when the
// timeline may have moved, ended when the session's course has ended.
func (s *Session) onMessage(m *message) (rearm, ended bool) {
	switch m.kind {
	case msgStop:
		m.reply <- reply{}
		s.stop(m.reason, m.grace)
		return false, true
	case msgLeave:
		m.reply <- reply{}
		s.leave()
		return false, true
	case msgExtend:
		rec, err := s.extend(m.by, m.byAgent)
		m.reply <- reply{rec: rec, err: err}
		return true, false
	case msgAgent:
		resp, spent, err := s.agentEvent(m.payload)
		m.reply <- reply{hook: resp, err: err}
		if spent {
			s.stop(Budget, -1)
			return false, true
		}
		return true, false
	default:
		s.answer(*m)
		return false, false
	}
}

// resetTimeline sets the timeline from the record and the spec.
func (s *Session) resetTimeline() {
	s.timeline = timeline{
		deadline: s.rec.Deadline, warnAt: s.rec.WarnAt, warnBefore: s.spec.WarnBefore.Duration,
		warned:      s.rec.State == ipc.StateWarned && (s.rec.Warning == nil || s.rec.Warning.Reason != warnWaiting && s.rec.Warning.Reason != warnBudget),
		idle:        s.spec.IdleTimeout.Duration,
		waitTimeout: s.spec.WaitingTimeout.Duration, waitingSince: s.timeline.waitingSince,
	}
}

// answer handles the requests that do not change the session's course.
func (s *Session) answer(m message) {
	switch m.kind {
	case msgSignal:
		m.reply <- reply{err: s.signal(m)}
	case msgReport:
		rep, err := s.report(m)
		m.reply <- reply{report: rep, err: err}
	case msgCheckpoint:
		s.requestCheckpoint(m)
	case msgAgent:
		// The agent's last words while it stops still count.
		resp, _, err := s.agentEvent(m.payload)
		m.reply <- reply{hook: resp, err: err}
	case msgExtend:
		m.reply <- reply{err: ipc.Conflict("session %s is stopping; only a running session can be extended", s.id)}
	default:
		m.reply <- reply{err: ipc.Conflict("session %s is stopping", s.id)}
	}
}

func (s *Session) signal(m message) error {
	if err := s.signalGroup(m.sig); err != nil {
		return fmt.Errorf("signal session %s: %w", s.id, err)
	}
	return nil
}

// stop ends the session: the stop signal to its group, the grace period,
// then SIGKILL to the group and every process of the session.
func (s *Session) stop(reason Reason, grace time.Duration) {
	if grace < 0 {
		grace = s.spec.StopGrace.Duration
	}
	s.rec.State = ipc.StateStopping
	s.rec.EndReason = string(reason)
	_ = s.commit()
	s.emit(ipc.EventStopping, fmt.Sprintf("stopping (%s): %s, then SIGKILL after %s", reason, s.spec.StopSignal, grace), nil)
	if err := s.signalGroup(s.spec.StopSignal.Num); err != nil {
		s.logger().Warn("send stop signal", zap.Error(err))
	}
	killed := false
	graceT := s.deps.Clock.NewTimer(grace)
	defer func() { graceT.Stop() }()
	for {
		select {
		case <-s.child.Done():
			s.end(reason, s.child.Exit())
			return
		case <-graceT.C():
			if !killed {
				killed = true
				s.killAll()
				// The leader is dead or unkillable (uninterruptible sleep);
				// give the reaper a bounded time before giving up on it.
				graceT = s.deps.Clock.NewTimer(5 * time.Second)
				continue
			}
			s.logger().Error("session leader did not exit after SIGKILL", zap.Int("pid", s.child.PID))
			s.end(reason, proc.Exit{Code: -1, Signal: "unknown"})
			return
		case <-s.ticks:
		case r := <-s.ckptDone:
			s.checkpointDone(*r)
		case m := <-s.inbox:
			switch m.kind {
			case msgStop:
				// A second stop with a shorter grace hurries the first.
				if m.grace >= 0 && m.grace < grace && !killed {
					graceT.Stop()
					graceT = s.deps.Clock.NewTimer(m.grace)
					grace = m.grace
				}
				m.reply <- reply{}
			case msgLeave:
				m.reply <- reply{err: ipc.Conflict("session %s is stopping", s.id)}
			case msgCheckpoint:
				m.reply <- reply{err: ipc.Conflict("session %s is stopping; its final checkpoint is taken at its end", s.id)}
			default:
				s.answer(*m)
			}
		}
	}
}

// killAll sends SIGKILL to every process of the session, bounded in time.
func (s *Session) killAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if left := proc.KillSession(ctx, s.id, s.child.PID, !s.adopted); len(left) > 0 {
		s.logger().Error("processes of the session survived SIGKILL", zap.Ints("pids", left))
	}
}

// procs returns the session's live processes, the leader first.
func (s *Session) procs() []int {
	out := []int{s.child.PID}
	for _, pid := range proc.SessionProcs(s.id, s.child.PID, !s.adopted) {
		if pid != s.child.PID {
			out = append(out, pid)
		}
	}
	return out
}

// owns reports whether pid is a process of the session.
func (s *Session) owns(pid int) bool {
	return slices.Contains(s.procs(), pid)
}

// leave lets the session run on without this daemon: what watches it is
// released, nothing of the session is ended.
func (s *Session) leave() {
	if s.unschedule != nil {
		s.unschedule()
	}
	s.waitCheckpoint()
	if s.unwatchLog != nil {
		s.unwatchLog()
	}
	if s.watch != nil {
		_ = s.watch.Close()
	}
	s.releaseTerminal()
	s.logger().Info("leaving session running for adoption", zap.Int("pid", s.child.PID))
}
