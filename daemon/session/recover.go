package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/term"
	"github.com/sessiond/sessiond/ipc"
)

// logAdopter is the OutputWatcher of a daemon that tells a log it watches
// for an adopted session (whose bytes so far are of unknown time) from one
// it watches from the start.
type logAdopter interface {
	Adopt(path string)
}

// Recover takes over a session that an earlier daemon recorded as live,
// after a restart, and reports whether it was adopted: its command still
// running (the same pid, start time and boot, or its terminal holder still
// there) is supervised on; one that is gone ends — with the end the
// earlier daemon recorded and did not finish, with the status its terminal
// holder recorded, or as crashed.
func (s *Session) Recover(ctx context.Context) bool {
	rec := s.rec
	close(s.started)
	switch {
	case rec.EndedAt != nil && Reason(rec.EndReason).Valid():
		s.logger().Info("finishing the end an earlier daemon recorded", zap.String("reason", rec.EndReason))
		s.child = proc.Gone(rec.PID)
		s.finishRecordedEnd(Reason(rec.EndReason))
		s.release()
		return false
	case rec.State == ipc.StateStarting:
		// Its command may have been spawned just before the crash; the
		// daemon's sweep kills it, as it belongs to no live session.
	case rec.TTY:
		return s.recoverTerminal(ctx)
	case rec.PID > 0 && rec.BootID == s.deps.BootID && proc.Alive(rec.PID, rec.StartTime):
		child, err := proc.Adopt(rec.PID, rec.StartTime)
		if err == nil {
			if a, ok := s.deps.Output.(logAdopter); ok {
				a.Adopt(s.logPath())
			}
			s.adopt(child)
			return true
		}
		s.logger().Warn("cannot adopt live session; killing it", zap.Error(err))
		kctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		proc.KillSession(kctx, rec.ID, rec.PID, false)
		cancel()
	}
	s.crashed()
	return false
}

// crashed ends a session whose process is gone and whose end nobody saw.
func (s *Session) crashed() {
	s.child = proc.Gone(s.rec.PID)
	s.ckpt.last = s.startedAt
	s.beginEnd(Crashed, proc.Exit{Code: -1})
	s.release()
}

// adopt takes over a live session that an earlier daemon started: child
// is its process, still running. The exit status will be unknown, unless
// a terminal holder records it.
func (s *Session) adopt(child *proc.Child) {
	s.child, s.adopted = child, true
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
		s.supervise()
		if s.rec.State == ipc.StateStopping {
			// The previous daemon began this stop.
			s.beginStop(Reason(s.rec.EndReason), -1)
		}
		s.run()
	}()
}

// recoverTerminal takes over a tty session: its holder is found again and
// the session adopted, with the exit status still to come from the holder
// (true). A command that ended while no daemon ran ends the session with
// the status its holder recorded; a holder that is gone without one ends
// it as crashed (false).
func (s *Session) recoverTerminal(ctx context.Context) bool {
	h, err := term.Connect(ctx, s.dir)
	if err == nil {
		if info := h.Info(); info.ChildPID != s.rec.PID || (s.rec.StartTime != 0 && info.ChildStart != s.rec.StartTime) {
			err = fmt.Errorf("its holder runs pid %d, the record says %d", info.ChildPID, s.rec.PID)
		}
	}
	var exited *term.ExitedError
	switch {
	case err == nil:
		s.adopt(s.attachHolder(h))
		return true
	case errors.As(err, &exited):
		s.endObserved(exited.Exit)
		return false
	}
	s.warnRecord(fmt.Sprintf("the terminal holder was gone after a daemon restart: %v", err))
	s.logger().Warn("terminal holder gone", zap.Error(err))
	s.crashed()
	return false
}

// endObserved ends a session whose command ended while no daemon ran, with
// the exit status its terminal holder recorded.
func (s *Session) endObserved(ex ipc.TermExit) {
	child, report := proc.Watched(s.rec.PID, s.rec.StartTime)
	exit := proc.Exit{Code: ex.Code, Signal: ex.Signal}
	report(exit)
	s.child = child
	s.warnRecord(fmt.Sprintf("the command ended at %s while no daemon ran (%s, as its terminal holder recorded)", ex.ExitedAt.Format(time.RFC3339), ex))
	s.ckpt.last = s.startedAt
	reason := reasonOf(exit.Code)
	if r := Reason(s.rec.EndReason); s.rec.State == ipc.StateStopping && r.Valid() {
		reason = r // the stop an earlier daemon began
	}
	s.beginEnd(reason, exit)
	s.release()
}
