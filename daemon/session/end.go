package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// end records the session's end, in the order of DESIGN §4: nothing the
// session started outlives it, the sidecars stop, the final checkpoint is
// taken if anything changed, the end is recorded, then the handoff, the
// session state and the progress entry are written, the lock released, and
// only then the session turns ended and anyone is told.
func (s *Session) end(reason Reason, exit proc.Exit) {
	now := s.deps.Clock.Now()
	s.killAll()
	devServer := s.stopSidecars()
	// Nothing of the session writes its log any more: its end is read
	// for the handoff while the log is still open (a tty session's end is
	// its screen, which its holder records).
	var tail []string
	if !s.onTerminal() {
		if tail = s.logTail(handoffTail); tail == nil {
			tail = []string{}
		}
	}
	if s.unwatchLog != nil {
		s.unwatchLog()
	}
	s.finishCheckpoints()
	if s.watch != nil {
		_ = s.watch.Close()
		applyStats(&s.rec, s.watch.Stats())
		// What it saw is in the record now: an ended session, kept in the
		// history, does not hold its watch's maps.
		s.watchP.Store(nil)
		s.watch = nil
	}
	// The agent's last turn counts in its tokens.
	s.readTranscript()
	s.removeAgentFiles()
	// The end is on disk before the files that tell of it: a daemon that
	// dies from here on finishes this end rather than inventing another.
	s.rec.EndedAt = &now
	s.rec.EndReason = string(reason)
	s.rec.Signal = exit.Signal
	if exit.Code >= 0 {
		code := exit.Code
		s.rec.ExitCode = &code
	}
	if t := s.lastOutput.Load(); t != 0 {
		s.rec.LastActivity = latest(s.rec.LastActivity, t)
	}
	s.rec.DevServerWasRunning = devServer
	_ = s.commit()
	s.finishEnd(reason, tail)
}

// handoffTail is how many lines of the session's output the handoff has.
const handoffTail = 20

// finishEnd writes the account of an end already in the record, releases
// the project, and turns the session ended. It is what a restarted daemon
// runs for a session whose end the previous one recorded but did not
// finish: every step may run twice without doubling anything. tail is
// the end of the session's output, nil to read it now.
func (s *Session) finishEnd(reason Reason, tail []string) {
	// A handoff that cannot be written (a full disk) is retried until it
	// lands, and said so in the record meanwhile: the session stays
	// stopping, its end recorded, and a daemon that stops first leaves the
	// rest to the next one.
	delay := time.Second
	for {
		err := s.writeAccount(reason, tail)
		if err == nil {
			break
		}
		s.rec.Error = fmt.Sprintf("the end is not on disk yet (%v); retrying in %s", err, delay)
		_ = s.commit()
		s.logger().Error("write the end of the session; retrying", zap.Error(err), zap.Duration("in", delay))
		if !s.waitRetry(delay) {
			return
		}
		delay = min(delay*2, time.Minute)
	}
	s.rec.Error = ""
	if p := s.proj; p != nil {
		var warnErr error
		_ = p.Hold(func(q *state.Project) error {
			if l, err := q.ReadLock(); err == nil && l.SessionID == s.id {
				_ = q.RemoveLock()
			}
			warnErr = q.RemoveWarning()
			return nil
		})
		if warnErr != nil {
			s.logger().Debug("remove warning file", zap.Error(warnErr))
		}
	}
	s.rec.State = ipc.StateEnded
	_ = s.commit()
	rec := s.Snapshot()
	s.logger().Info("session ended", zap.String("reason", string(reason)), zap.Intp("exit_code", rec.ExitCode), zap.String("signal", rec.Signal))
	close(s.done)
	s.emit(ipc.EventEnded, "ended: "+describeEnd(rec.EndReason, rec.ExitCode, rec.Signal), rec)
	if s.deps.OnEnd != nil {
		s.deps.OnEnd(s)
	}
}

// waitRetry waits d before the end is written again, answering requests
// meanwhile; it returns false when the session is to be left to the next
// daemon (shutdown), which finishes the end from the record.
func (s *Session) waitRetry(d time.Duration) bool {
	t := s.deps.Clock.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C():
			return true
		case m := <-s.inbox:
			switch m.kind {
			case msgLeave:
				m.reply <- reply{}
				return false
			case msgStop:
				m.reply <- reply{}
			default:
				m.reply <- reply{err: ipc.Conflict("session %s is ending: %s", s.id, s.rec.Error)}
			}
		}
	}
}

// writeAccount writes what the next session needs to know, with the
// session's user's rights: the handoff (the project's, and the archive in
// the state dir), the session state and the progress entry. It returns
// what could not be written. tail is the end of the output, nil to read
// it now.
func (s *Session) writeAccount(reason Reason, tail []string) error {
	p := s.proj
	if tail == nil {
		tail = s.logTail(handoffTail)
	}
	if len(tail) == 0 {
		tail = nil // read and empty: as the handoff always said it
	}
	in := accountInput{
		Rec: s.rec, Spec: s.spec, Reason: reason, Now: *s.rec.EndedAt,
		LogTail: tail, FeaturesAtStart: s.featuresAtStart,
	}
	if in.Rec.Report != nil {
		in.Report = *in.Rec.Report
	}
	if p == nil {
		in.FeaturesErr = errProjectGone
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		if facts, err := checkpoint.Facts(ctx, checkpoint.FactsRequest{Dir: s.projectDir, Credential: s.gitCredential()}); err == nil && facts.IsRepo {
			in.Git = &facts
		}
		// What changed, less the temporary files made and removed on the
		// way (a deleted tracked file stays: git lists it).
		keep := p.Existing(in.Rec.FilesChanged)
		if in.Git != nil {
			gone := map[string]bool{}
			for _, f := range in.Git.Uncommitted {
				gone[f] = true
			}
			for _, f := range in.Rec.FilesChanged {
				if gone[f] && !slices.Contains(keep, f) {
					keep = append(keep, f)
				}
			}
			slices.Sort(keep)
		}
		if keep == nil {
			keep = []string{}
		}
		s.rec.FilesChanged, in.Rec.FilesChanged = keep, keep
		var prevErr error
		_ = p.Hold(func(q *state.Project) error {
			in.Features, in.FeaturesErr = q.LoadFeatures(s.spec.FeatureList)
			in.Previous, prevErr = q.LoadSessionState()
			return nil
		})
		if prevErr != nil {
			s.logger().Warn("session state", zap.Error(prevErr))
		}
		in.Worktree = s.worktreeHandoff(ctx, in.Git)
	}

	h := buildHandoff(in)
	var errs []error
	if p == nil {
		s.logger().Error("project unreachable: only the handoff archive is written", zap.String("dir", s.projectDir))
	} else if _, err := state.OpenProject(p.Dir(), s.owner); errors.Is(err, state.ErrProjectUnreachable) {
		// A project that is gone, or out of its user's reach: there is
		// nothing to wait for.
		s.warnRecord("the project directory is unreachable: the handoff is only in the state dir")
		s.logger().Error("project unreachable: only the handoff archive is written", zap.Error(err))
	} else {
		// Each step may run again after a failure without doubling
		// anything: the files are replaced whole, and the progress entry
		// is appended once per session.
		var progressErr error
		_ = p.Hold(func(q *state.Project) error {
			if err := q.SaveHandoff(h); err != nil {
				errs = append(errs, err)
			}
			if err := q.SaveSessionState(buildSessionState(in, h)); err != nil {
				errs = append(errs, err)
			}
			_, progressErr = q.AppendProgress(s.spec.ProgressFile, buildProgressEntry(in, h))
			return nil
		})
		if progressErr != nil && !errors.Is(progressErr, state.ErrOutsideProject) {
			errs = append(errs, progressErr)
		} else if progressErr != nil {
			s.logger().Error("progress log refused", zap.Error(progressErr))
		}
		s.rec.HandoffPath = filepath.Join(p.StateDir(), state.HandoffFile)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// The archive last: its presence says the account was written.
	return state.SaveHandoff(filepath.Join(s.dir, "handoff.json"), h)
}

// errProjectGone stands for the feature list of a project that could not
// be opened.
var errProjectGone = errors.New("the project directory is unreachable")

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
