package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/ipc"
)

// stopping is the stop under way: why, its grace, and whether the group
// was killed already.
type stopping struct {
	reason Reason
	grace  time.Duration
	killed bool
	// timer fires at the end of the grace, then once more after the kill.
	timer Timer
	at    time.Time
}

// killWait bounds the wait for the reaper after SIGKILL: the leader may be
// unkillable (uninterruptible sleep).
const killWait = 5 * time.Second

// beginStop begins the end of the session: the stop signal to its group,
// the grace period, then SIGKILL to the group and every process of the
// session.
func (s *Session) beginStop(reason Reason, grace time.Duration) {
	s.beginStopBy(reason, grace, -1, false)
}

// beginAskedStop begins the stop r asked for.
func (s *Session) beginAskedStop(r *stopRequest) {
	s.beginStopBy(r.reason, r.grace, r.by, r.restart)
}

// beginStopBy is beginStop for a stop that uid by asked for (-1 the
// daemon), a restart to follow or not. The intent is on disk before the
// first signal (recordStop): a daemon that dies during the grace leaves the
// next one to finish this stop, as the end it is.
func (s *Session) beginStopBy(reason Reason, grace time.Duration, by int, restart bool) {
	if grace < 0 {
		grace = s.spec.StopGrace.Duration
	}
	s.sv.stop()
	s.phase = phaseStopping
	s.rec.State = ipc.StateStopping
	s.rec.EndReason = string(reason)
	if st := s.rec.Stop; st == nil || st.Reason != string(reason) || restart || by >= 0 {
		s.rec.Stop = &ipc.StopIntent{At: s.deps.Clock.Now(), Reason: string(reason), GraceMS: grace.Milliseconds(), By: by, Restart: restart}
	}
	if err := s.recordStop(); err != nil {
		s.logger().Warn("the stop is not on disk; stopping all the same", zap.Error(err))
	}
	s.emit(ipc.EventStopping, fmt.Sprintf("stopping (%s): %s, then SIGKILL after %s", reason, s.spec.StopSignal, grace), nil)
	if err := s.signalGroup(s.spec.StopSignal.Num); err != nil {
		s.logger().Warn("send stop signal", zap.Error(err))
	}
	s.stop = &stopping{reason: reason, grace: grace}
	s.armStop(grace)
}

// recordStop puts the stop's intent on disk: in the daemon's journal of
// stops, shared with the stops asked at the same time, the record itself
// following at the end; or, without a journal, in the record.
func (s *Session) recordStop() error {
	if s.deps.Stops == nil {
		return s.commit()
	}
	// Whoever sees the session stopping finds the stop on disk.
	err := s.deps.Stops.Record(s.id, *s.rec.Stop)
	s.publish()
	return err
}

// armStop arms the stop's timer d from now.
func (s *Session) armStop(d time.Duration) {
	st := s.stop
	if st.timer != nil {
		st.timer.Stop()
	}
	now := s.deps.Clock.Now()
	st.at = now.Add(d)
	st.timer = s.deps.Clock.AfterFunc(d, s.alarm)
}

// stepStopping is the stopping session's step.
func (s *Session) stepStopping(ev event) {
	st := s.stop
	switch ev.what {
	case gotExit:
		st.timer.Stop()
		s.beginEnd(st.reason, s.child.Exit())
	case gotAlarm:
		if s.deps.Clock.Now().Before(st.at) {
			return
		}
		if !st.killed {
			st.killed = true
			s.killAll()
			s.armStop(killWait)
			return
		}
		s.logger().Error("session leader did not exit after SIGKILL", zap.Int("pid", s.child.PID))
		s.beginEnd(st.reason, proc.Exit{Code: -1, Signal: "unknown"})
	case gotCheckpoint:
		s.checkpointDone(*ev.ckpt)
	case gotRequest:
		switch r := ev.req.(type) {
		case *stopRequest:
			// A second stop with a shorter grace hurries the first.
			if r.grace >= 0 && r.grace < st.grace && !st.killed {
				st.grace = r.grace
				s.armStop(r.grace)
			}
			r.reply <- nil
		case *hookRequest:
			// The agent's last words while it stops still count.
			resp, _, err := s.agentEvent(r.payload)
			r.reply <- result[ipc.AgentHookResponse]{resp, err}
		case *signalRequest:
			r.reply <- s.signal(r.sig)
		case *reportRequest:
			rep, err := s.report(r)
			r.reply <- result[ipc.Report]{rep, err}
		case *checkpointRequest:
			r.refuse(ipc.Conflict("session %s is stopping; its final checkpoint is taken at its end", s.id))
		case *extendRequest:
			r.refuse(ipc.Conflict("session %s is stopping; only a running session can be extended", s.id))
		default:
			r.refuse(ipc.Conflict("session %s is stopping", s.id))
		}
	}
}

// killAll sends SIGKILL to every process of the session, bounded in time.
func (s *Session) killAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if s.killContained(ctx) {
		// The leader, the daemon's child, is reaped by the reaper; its
		// cgroup holds nothing more. A process that left the cgroup (a
		// root session's may) but is still in the command's process
		// group is found as without a cgroup, each proven the session's:
		// looked for only while the group has a member, one signal 0.
		if s.child == nil || !groupHasMembers(s.child.PID) {
			return
		}
	}
	if left := proc.KillSession(ctx, s.id, s.child, !s.adopted); len(left) > 0 {
		s.logger().Error("processes of the session survived SIGKILL", zap.Ints("pids", left))
	}
}

// groupHasMembers reports whether a process group pgid has a process left.
func groupHasMembers(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	return !errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
}
