package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/ipc"
)

// Start runs the session: its goroutine starts the command (see start.go),
// supervises it, and ends it. Started says when the command runs or the
// start has failed.
func (s *Session) Start() {
	go func() {
		if err := s.start(); err != nil {
			s.fail(err)
			close(s.exited)
			return
		}
		go s.live(s.supervise)
	}()
}

// live runs what is left of the session's life, f, on a goroutine of its
// own: a fresh one, whose stack has not grown through the start's work,
// so that an idle session holds a few KiB of stack, not what its start
// needed.
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
		s.log.Info("adopted live session", zap.Int("pid", child.PID))
		if s.rec.State == ipc.StateStopping {
			// The previous daemon began this stop.
			s.live(func() { s.stop(Reason(s.rec.EndReason), -1) })
			return
		}
		go s.live(s.supervise)
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
			s.log.Info("finishing the end an earlier daemon recorded", zap.String("reason", s.rec.EndReason))
			s.finishEnd(Reason(s.rec.EndReason))
			return
		}
		s.ckpt.last = s.startedAt
		s.end(Crashed, proc.Exit{Code: -1})
	}()
}

// supervise is the session's life while it runs: timers, the child's exit,
// checkpoints and requests, until it ends.
func (s *Session) supervise() {
	s.resetTimeline()
	sv := &supervision{}
	sv.tm, sv.what = s.arm(nil)
	defer sv.stop()
	for !s.superviseOnce(sv) {
	}
}

// supervision is what supervise keeps between two waits: the timeline's
// timer and what it is for, and the timer that flushes what an agent's
// events left unwritten (armed only then, so that an idle session has no
// timer but its deadline's). It lives on the heap, not in the frame a
// parked session keeps on its stack.
type supervision struct {
	tm    Timer
	what  due
	flush Timer
}

func (sv *supervision) stop() {
	sv.tm.Stop()
	if sv.flush != nil {
		sv.flush.Stop()
	}
}

// superviseOnce waits for the next thing to happen to the running session
// and handles it; true when the session's course has ended. Its frame is
// what an idle session holds on its stack while it waits: the select and
// nothing else.
//
//go:noinline
func (s *Session) superviseOnce(sv *supervision) bool {
	if s.recDirty && sv.flush == nil {
		sv.flush = s.deps.Clock.NewTimer(agentFlush)
	}
	var flushC <-chan time.Time
	if sv.flush != nil {
		flushC = sv.flush.C()
	}
	select {
	case <-flushC:
		sv.flush = nil
		if s.recDirty {
			_ = s.commit()
		}
	case <-s.child.Done():
		s.onExit()
		return true
	case <-sv.tm.C():
		if s.onDue(sv.what) {
			return true
		}
		sv.tm, sv.what = s.arm(sv.tm)
	case <-s.ticks:
		s.scheduledCheckpoint()
	case r := <-s.ckptDone:
		s.onCheckpointDone(r)
	case m := <-s.inbox:
		rearm, ended := s.onMessage(m)
		if ended {
			return true
		}
		if rearm {
			sv.tm, sv.what = s.arm(sv.tm)
		}
	}
	return false
}

//go:noinline
func (s *Session) onCheckpointDone(r *ckptResult) { s.checkpointDone(*r) }

// arm stops tm, if any, and returns the timer of the timeline's next due
// moment, and what is due then.
//
//go:noinline
func (s *Session) arm(tm Timer) (Timer, due) {
	if tm != nil {
		tm.Stop()
	}
	at, what := s.timeline.next(s.lastActivity())
	return s.deps.Clock.NewTimer(at.Sub(s.deps.Clock.Now())), what
}

// onExit ends the session whose command exited.
//
//go:noinline
func (s *Session) onExit() {
	exit := s.child.Exit()
	s.end(s.exitReason(exit), exit)
}

// onDue acts on the timeline's due moment; true when the session's course
// has ended (it stopped). It and onMessage are methods of their own so
// that supervise's frame, which a parked session keeps on its stack, stays
// small.
//
//go:noinline
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
//
//go:noinline
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
//
//go:noinline
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
		s.log.Warn("send stop signal", zap.Error(err))
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
			s.log.Error("session leader did not exit after SIGKILL", zap.Int("pid", s.child.PID))
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
		s.log.Error("processes of the session survived SIGKILL", zap.Ints("pids", left))
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
	s.log.Info("leaving session running for adoption", zap.Int("pid", s.child.PID))
}
