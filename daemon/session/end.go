package session

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/ipc"
)

// ending is the end under way. It goes through its stages in the order of
// DESIGN §4, the blocking ones on a worker: nothing the session started
// outlives it and the sidecars stop (collect); the checkpoint being taken
// comes in and a final one is taken if anything changed (checkpoints); the
// end is recorded (record); the handoff, the session state and the
// progress entry are written and the lock released, in one section of the
// project, then the handoff's archive, retried until they land (account);
// only then the session turns ended and anyone is told.
type ending struct {
	reason Reason
	exit   proc.Exit
	stage  endStage
	// tail is the end of the output (nil: read it at the account).
	tail      []string
	devServer bool
	// settled: the watcher has caught up with the last writes;
	// finalBegun: the final checkpoint was begun (or needed none).
	settled, finalBegun bool
	// retry is the timer of the next attempt at the account; delay the
	// wait after the next failure.
	retry   Timer
	retryAt time.Time
	delay   time.Duration
	// at is when it ended, when that is known better than now: the last
	// sign of life of a session whose end no daemon saw.
	at time.Time
}

type endStage int

const (
	endCollect endStage = iota
	endCheckpoints
	endRecord
	endAccount
	endRetry
)

// handoffTail is how many lines of the session's output the handoff has.
const handoffTail = 20

// beginEnd ends the session, whose command exited with exit (or is to be
// killed): the first stage runs on a worker.
func (s *Session) beginEnd(reason Reason, exit proc.Exit) {
	s.sv.stop()
	if s.stop != nil && s.stop.timer != nil {
		s.stop.timer.Stop()
	}
	s.phase = phaseEnding
	s.end = &ending{reason: reason, exit: exit, delay: time.Second}
	if st := s.rec.State; ipc.Live(st) && st != ipc.StateStopping && st != ipc.StateStarting {
		// Its process is gone: whoever asks sees it stopping, not running,
		// until its end is on disk.
		s.rec.State = ipc.StateStopping
		s.publish()
	}
	if s.unschedule != nil {
		s.unschedule()
		s.unschedule = nil
	}
	s.work(func() func() {
		s.killAll()
		devServer := s.stopSidecars()
		s.closeCgroup()
		// Nothing of the session writes its log any more: its end is read
		// for the handoff while the log is still open (a tty session's end
		// is its screen, which its holder records).
		var tail []string
		if !s.onTerminal() {
			s.deps.Output.Done(s.logPath())
			if tail = s.logTail(handoffTail); tail == nil {
				tail = []string{}
			}
		}
		if s.unwatchLog != nil {
			s.unwatchLog()
			s.unwatchLog = nil
		}
		return func() {
			s.end.devServer, s.end.tail = devServer, tail
			s.end.stage = endCheckpoints
			s.endCheckpoints()
		}
	})
}

// finishRecordedEnd finishes an end an earlier daemon recorded: its account
// on, each step of which may run twice without doubling anything.
func (s *Session) finishRecordedEnd(reason Reason) {
	s.phase = phaseEnding
	s.end = &ending{reason: reason, stage: endAccount, delay: time.Second}
	// Its cgroup, found again, goes once the end is on disk, as any end's:
	// the daemon's sweep at start passes over the sessions whose ends are
	// still being written (a full disk).
	s.closeCgroup()
	s.writeAccountNow()
}

// stepEnding is the ending session's step: requests are answered at once
// (a stop has nothing more to do; anything else is refused, naming the
// end), the stages move on as their results come.
func (s *Session) stepEnding(ev event) {
	e := s.end
	switch ev.what {
	case gotRequest:
		switch r := ev.req.(type) {
		case *stopRequest:
			r.reply <- nil
		case *leaveRequest:
			if e.stage == endRetry {
				// The end is recorded: the next daemon finishes it.
				r.reply <- nil
				e.retry.Stop()
				s.phase = phaseOver
				return
			}
			r.refuse(s.endingConflict())
		default:
			r.refuse(s.endingConflict())
		}
	case gotCheckpoint:
		s.checkpointDone(*ev.ckpt)
		if e.stage == endCheckpoints {
			s.endCheckpoints()
		}
	case gotAlarm:
		if e.stage == endRetry && !s.deps.Clock.Now().Before(e.retryAt) {
			e.stage = endAccount
			s.writeAccountNow()
		}
	}
}

// endingConflict is the answer to what cannot be done while the session
// ends.
func (s *Session) endingConflict() error {
	if s.rec.Error != "" {
		return ipc.Conflict("session %s is ending (%s): %s", s.id, s.end.reason, s.rec.Error)
	}
	return ipc.Conflict("session %s is ending (%s); its handoff is being written", s.id, s.end.reason)
}

// endCheckpoints moves the checkpoint stage on: the checkpoint being taken
// comes in (requests waiting for the next one are told the session ends),
// the watcher catches up with the last writes, and a final checkpoint is
// taken if anything changed since the last.
func (s *Session) endCheckpoints() {
	e := s.end
	for _, r := range s.ckpt.waiting {
		r.refuse(ipc.Conflict("session %s is ending; its final checkpoint is taken at its end", s.id))
	}
	s.ckpt.waiting, s.ckpt.turnPending = nil, false
	if s.ckpt.busy {
		return // its result moves the stage on
	}
	if !e.settled {
		e.settled = true
		if w, mark := s.watch, s.ckpt.mark; w != nil {
			// The last writes before the exit are in the watch's facts and
			// in the final checkpoint's record: wait until the watcher has
			// seen them (its barrier).
			s.work(func() func() {
				ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
				_, _ = w.Changes(ctx, mark)
				cancel()
				return s.endCheckpoints
			})
			return
		}
	}
	if !e.finalBegun {
		e.finalBegun = true
		if s.spec.Checkpoint != "" && (s.watch == nil || s.watch.ChangedSince(s.ckpt.last)) {
			s.beginCheckpoint("final", "")
			return
		}
	}
	s.endRecord()
}

// endRecord records the end, before the files that tell of it: a daemon
// that dies from here on finishes this end rather than inventing another.
func (s *Session) endRecord() {
	e := s.end
	e.stage = endRecord
	s.work(func() func() {
		if s.watch != nil {
			_ = s.watch.Close()
			applyStats(&s.rec, s.watch.Stats())
			// What it saw is in the record now: an ended session, kept in
			// the history, does not hold its watch's maps.
			s.watchP.Store(nil)
			s.watch = nil
		}
		// The agent's last turn counts in its tokens.
		s.readTranscript()
		s.removeAgentFiles()
		return func() {
			now := s.deps.Clock.Now()
			if !e.at.IsZero() && e.at.Before(now) {
				now = e.at
			}
			s.rec.EndedAt = &now
			s.rec.EndReason = string(e.reason)
			s.rec.Signal = e.exit.Signal
			if e.exit.Code >= 0 {
				code := e.exit.Code
				s.rec.ExitCode = &code
			}
			if t := s.lastOutput.Load(); t != 0 {
				s.rec.LastActivity = latest(s.rec.LastActivity, t)
			}
			s.rec.DevServerWasRunning = e.devServer
			_ = s.commit()
			e.stage = endAccount
			s.writeAccountNow()
		}
	})
}

// maxEndRetry is the longest wait between two tries of an end's writes.
const maxEndRetry = 5 * time.Second

// writeAccountNow writes the account of the recorded end on a worker; one
// that cannot be written (a full disk) is retried until it lands, and said
// so in the record meanwhile: the session stays stopping, its end
// recorded, and a daemon that stops first leaves the rest to the next one.
func (s *Session) writeAccountNow() {
	e := s.end
	s.work(func() func() {
		err := s.writeAccount(e.reason, e.tail)
		return func() {
			if err != nil {
				s.rec.Error = fmt.Sprintf("the end is not on disk yet (%v); retrying in %s", err, e.delay)
				_ = s.commit()
				s.deps.Pending.set(s, err)
				s.logger().Error("write the end of the session; retrying", zap.Error(err), zap.Duration("in", e.delay),
					zap.String("pending", s.deps.Pending.Warning()))
				e.stage = endRetry
				e.retryAt = s.deps.Clock.Now().Add(e.delay)
				e.retry = s.deps.Clock.AfterFunc(e.delay, s.alarm)
				// Soon enough to land once there is room, rarely enough
				// that thousands of pending ends cost nothing.
				e.delay = min(e.delay*2, maxEndRetry)
				return
			}
			s.deps.Pending.set(s, nil)
			s.ended()
		}
	})
}

// ended turns the session ended, its end on disk, and tells of it.
func (s *Session) ended() {
	s.rec.Error = ""
	s.rec.State = ipc.StateEnded
	encoded := s.commitJSON()
	rec := s.Snapshot()
	s.logger().Info("session ended", zap.String("reason", string(s.end.reason)), zap.Intp("exit_code", rec.ExitCode), zap.String("signal", rec.Signal))
	// The cgroup's removal is queued before anyone learns of the end: a
	// daemon that shuts down once its sessions have ended runs what is
	// queued, then removes its own cgroup, which the session's, queued
	// after that, would have kept.
	s.removeCgroup()
	close(s.done)
	// The event carries the record as written, encoded once.
	var data any = rec
	if encoded != nil {
		data = encoded
	}
	s.emit(ipc.EventEnded, "ended: "+describeEnd(rec.EndReason, rec.ExitCode, rec.Signal), data)
	if s.deps.OnEnd != nil {
		s.deps.OnEnd(s)
	}
	s.phase = phaseOver
}

// describeEnd says how a session ended: "error (exit 3)", "interrupted
// (SIGTERM)", or the reason alone when the exit status is unknown.
func describeEnd(reason string, code *int, signal string) string {
	switch {
	case signal != "":
		return fmt.Sprintf("%s (%s)", reason, signal)
	case code != nil:
		return fmt.Sprintf("%s (exit %d)", reason, *code)
	}
	return reason
}
