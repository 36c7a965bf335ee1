package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

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
	s.killHooks()
	devServer := s.stopSidecars()
	if s.unwatchLog != nil {
		s.unwatchLog()
	}
	s.finishCheckpoints()
	if s.watch != nil {
		_ = s.watch.Close()
		applyStats(&s.rec, s.watch.Stats())
	}
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
	s.finishEnd(reason)
}

// finishEnd writes the account of an end already in the record, releases
// the project, and turns the session ended. It is what a restarted daemon
// runs for a session whose end the previous one recorded but did not
// finish: every step may run twice without doubling anything.
func (s *Session) finishEnd(reason Reason) {
	s.writeAccount(reason)
	if p := s.proj; p != nil {
		if l, err := p.ReadLock(); err == nil && l.SessionID == s.id {
			_ = p.RemoveLock()
		}
		if err := p.RemoveWarning(); err != nil {
			s.log.Debug("remove warning file", zap.Error(err))
		}
	}
	s.rec.State = ipc.StateEnded
	_ = s.commit()
	rec := s.Snapshot()
	s.log.Info("session ended", zap.String("reason", string(reason)), zap.Intp("exit_code", rec.ExitCode), zap.String("signal", rec.Signal))
	close(s.done)
	s.emit(ipc.EventEnded, "ended: "+describeEnd(rec.EndReason, rec.ExitCode, rec.Signal), rec)
	if s.deps.OnEnd != nil {
		s.deps.OnEnd(s)
	}
}

// writeAccount writes what the next session needs to know, with the
// session's user's rights: the handoff (the project's, and the archive in
// the state dir), the session state and the progress entry.
func (s *Session) writeAccount(reason Reason) {
	p := s.proj
	in := accountInput{
		Rec: s.rec, Spec: s.spec, Reason: reason, Now: *s.rec.EndedAt,
		LogTail: s.tailLines(20), FeaturesAtStart: s.featuresAtStart,
	}
	if in.Rec.Report != nil {
		in.Report = *in.Rec.Report
	}
	if p == nil {
		in.FeaturesErr = errProjectGone
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		if facts, err := checkpoint.Facts(ctx, s.projectDir); err == nil && facts.IsRepo {
			in.Git = &facts
		}
		in.Features, in.FeaturesErr = p.LoadFeatures(s.spec.FeatureList)
		prev, err := p.LoadSessionState()
		if err != nil {
			s.log.Warn("session state", zap.Error(err))
		}
		in.Previous = prev
	}

	h := buildHandoff(in)
	if p == nil {
		s.log.Error("project unreachable: only the handoff archive is written", zap.String("dir", s.projectDir))
	} else {
		if err := p.SaveHandoff(h); err != nil {
			s.log.Error("write handoff", zap.Error(err))
		}
		if err := p.SaveSessionState(buildSessionState(in, h)); err != nil {
			s.log.Error("write session state", zap.Error(err))
		}
		// Appended once per session, however many times this runs.
		if _, err := p.AppendProgress(s.spec.ProgressFile, buildProgressEntry(in, h)); err != nil {
			s.log.Error("append progress log", zap.Error(err))
		}
		s.rec.HandoffPath = filepath.Join(p.StateDir(), state.HandoffFile)
	}
	// The archive last: its presence says the account was written.
	if err := state.SaveHandoff(filepath.Join(s.dir, "handoff.json"), h); err != nil {
		s.log.Error("archive handoff", zap.Error(err))
	}
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
