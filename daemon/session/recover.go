package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// Recovery is what Recover did with a session an earlier daemon recorded
// as live.
type Recovery int

const (
	// Adopted: its command still runs and is supervised on.
	Adopted Recovery = iota
	// Finished: the end the earlier daemon recorded is finished.
	Finished
	// Exited: its command ended while no daemon ran, with the status its
	// terminal holder recorded.
	Exited
	// Gone: its process is gone, or its pid cannot be proven to be its
	// process any more; it ends as crashed, its exit status unknown, and
	// nothing is signalled.
	Gone
)

// Recover takes over a session that an earlier daemon recorded as live,
// after a restart, and says what it did. Its command is adopted only if it
// is proven to be the one recorded: the same boot, pid and start time (or
// its terminal holder there, running that pid); whatever a pid names now
// otherwise, it is never signalled: the session ends as crashed, with the
// end the earlier daemon recorded and did not finish, or the status its
// terminal holder recorded.
func (s *Session) Recover(ctx context.Context) Recovery {
	rec := s.rec
	close(s.started)
	// Whatever becomes of it, its cgroup is found again: an adopted
	// session's stop kills it whole, a gone one's end kills what it left.
	s.findCgroup()
	switch {
	case rec.EndedAt != nil && Reason(rec.EndReason).Valid():
		s.logger().Debug("finishing the end an earlier daemon recorded", zap.String("reason", rec.EndReason))
		s.child = proc.Gone(rec.PID)
		s.finishRecordedEnd(Reason(rec.EndReason))
		s.release()
		return Finished
	case rec.BootID != "" && rec.BootID != s.deps.BootID:
		// The host went down under it: whatever its pid names now is
		// another process; nothing is signalled.
		s.rebooted()
		return Gone
	case rec.State == ipc.StateStarting:
		// Its command may have been spawned just before the crash; the
		// daemon's sweep kills it, as it belongs to no live session.
	case rec.TTY:
		return s.recoverTerminal(ctx)
	default:
		why, proven := s.unproven()
		if proven {
			child, err := proc.Adopt(s.recorded())
			if err == nil {
				if a, ok := s.deps.Output.(logAdopter); ok {
					a.Adopt(s.logPath())
				}
				s.adopt(child)
				return Adopted
			}
			why = err.Error()
		}
		if why != "" {
			s.warnRecord("after a daemon restart its process could not be proven to be the one recorded, and was left alone; exit status unknown: " + why)
		}
		s.logger().Debug("recorded process gone or not proven; ending the session", zap.String("why", why))
		if r := Reason(rec.EndReason); rec.State == ipc.StateStopping && r.Valid() {
			// A stop was under way: it ends as the end it was.
			s.warnRecord("the daemon stopped during this session's stop; the stop is finished as asked (exit status unknown)")
			s.child = proc.Gone(rec.PID)
			s.ckpt.last = s.startedAt
			s.beginEnd(r, proc.Exit{Code: -1})
			s.release()
			return Gone
		}
	}
	s.crashed()
	return Gone
}

// resumeStop goes on with the stop an earlier daemon began, with what is
// left of its grace.
func (s *Session) resumeStop() {
	reason, by, restart := Reason(s.rec.EndReason), -1, false
	grace := time.Duration(-1)
	if st := s.rec.Stop; st != nil {
		by, restart = st.By, st.Restart
		grace = max(time.Duration(st.GraceMS)*time.Millisecond-s.deps.Clock.Now().Sub(st.At), 0)
	}
	s.beginStopBy(reason, grace, by, restart)
}

// unproven reports whether the recorded pid is proven to be the session's
// process, and if not, why, where that is more than its being gone ("").
func (s *Session) unproven() (why string, proven bool) {
	rec := s.rec
	switch {
	case rec.PID <= 0:
		return "no pid recorded", false
	case rec.StartTime == 0 || rec.BootID == "":
		return fmt.Sprintf("pid %d recorded without its start time and boot", rec.PID), false
	case rec.BootID != s.deps.BootID:
		return fmt.Sprintf("pid %d was of another boot", rec.PID), false
	case rec.PID == os.Getpid():
		return fmt.Sprintf("pid %d is the daemon's own", rec.PID), false
	case !s.recorded().Alive():
		// Gone (perhaps a zombie nobody reaped), unless the pid is
		// another process's now.
		if now, err := proc.Identify(rec.PID); err == nil && (now.Start != rec.StartTime || (rec.PIDIno != 0 && now.Ino != 0 && now.Ino != rec.PIDIno)) {
			return fmt.Sprintf("pid %d is another process now", rec.PID), false
		}
		return "", false
	}
	return "", true
}

// recorded is the process the record names.
func (s *Session) recorded() proc.Process {
	return proc.Process{PID: s.rec.PID, Start: s.rec.StartTime, Ino: s.rec.PIDIno}
}

// crashed ends a session whose process is gone and whose end nobody saw:
// it ended while no daemon ran, when is not known, and how is not either.
// The end recorded is its last sign of life (the last write of its log or
// of its record, while a daemon watched it), not the restart that found it.
func (s *Session) crashed() {
	s.child = proc.Gone(s.rec.PID)
	s.ckpt.last = s.startedAt
	seen := s.lastSign()
	s.warnRecord(fmt.Sprintf("it ended while the daemon was down, at %s or later (its last sign of life), found at %s; exit status unknown",
		seen.UTC().Format(time.RFC3339), s.deps.Clock.Now().UTC().Format(time.RFC3339)))
	s.beginEnd(Crashed, proc.Exit{Code: -1})
	s.end.at = seen
	s.release()
}

// rebooted ends a session that was live when its host went down: at its
// last sign of life, its exit status unknown, its handoff written.
func (s *Session) rebooted() {
	s.child = proc.Gone(s.rec.PID)
	s.ckpt.last = s.startedAt
	seen := s.lastSign()
	s.warnRecord(fmt.Sprintf("the host went down under the session (its boot %s is over; found at %s): it ended at %s or later, its exit status unknown",
		s.rec.BootID, s.deps.Clock.Now().UTC().Format(time.RFC3339), seen.UTC().Format(time.RFC3339)))
	s.beginEnd(HostRebooted, proc.Exit{Code: -1})
	s.end.at = seen
	s.release()
}

// lastSign is the last moment the session is known to have been alive:
// the latest of its start, its last activity, its log's last write, and
// the last write of its record by a daemon that watched it.
func (s *Session) lastSign() time.Time {
	seen := s.startedAt
	if a := s.rec.LastActivity; a != nil && a.After(seen) {
		seen = *a
	}
	for _, name := range []string{"output.log", "session.json"} {
		if fi, err := os.Stat(filepath.Join(s.dir, name)); err == nil && fi.ModTime().After(seen) {
			seen = fi.ModTime()
		}
	}
	if now := s.deps.Clock.Now(); seen.After(now) {
		seen = now
	}
	return seen
}

// adopt takes over a live session that an earlier daemon started: child
// is its process, still running. The exit status will be unknown, unless
// a terminal holder records it.
func (s *Session) adopt(child *proc.Child) {
	s.child, s.adopted = child, true
	go func() {
		s.watchProject(nil)
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
			// The previous daemon began this stop: it goes on with what
			// is left of its grace.
			s.resumeStop()
		}
		s.run()
	}()
}

// recoverTerminal takes over a tty session: its holder is found again and
// the session adopted, with the exit status still to come from the holder.
// A command that ended while no daemon ran ends the session with the
// status its holder recorded; a holder that is gone without one ends it as
// crashed.
func (s *Session) recoverTerminal(ctx context.Context) Recovery {
	h, err := term.Connect(ctx, s.dir)
	if err == nil {
		if info := h.Info(); info.ChildPID != s.rec.PID || (s.rec.StartTime != 0 && info.ChildStart != s.rec.StartTime) ||
			(s.rec.PIDIno != 0 && info.ChildIno != 0 && info.ChildIno != s.rec.PIDIno) {
			err = fmt.Errorf("its holder runs pid %d, the record says %d", info.ChildPID, s.rec.PID)
		}
	}
	var exited *term.ExitedError
	switch {
	case err == nil:
		s.adopt(s.attachHolder(h))
		return Adopted
	case errors.As(err, &exited):
		s.endObserved(exited.Exit)
		return Exited
	}
	s.warnRecord(fmt.Sprintf("the terminal holder was gone after a daemon restart: %v; exit status unknown", err))
	s.logger().Debug("terminal holder gone", zap.Error(err))
	s.crashed()
	return Gone
}

// endObserved ends a session whose command ended while no daemon ran, with
// the exit status its terminal holder recorded.
func (s *Session) endObserved(ex ipc.TermExit) {
	child, report := proc.Watched(s.recorded())
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
	// Its end is when its holder saw the command end, not when this
	// daemon found it.
	if !ex.ExitedAt.IsZero() {
		s.end.at = ex.ExitedAt
	}
	s.release()
}
