package session

import (
	"context"
	"errors"
	"path/filepath"
	"slices"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
	"go.uber.org/zap"
)

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
		_ = p.Hold(func(q *state.Project) error {
			in.Features, in.FeaturesErr = q.LoadFeatures(s.spec.FeatureList)
			return nil
		})
		in.Worktree = s.worktreeHandoff(ctx, in.Git)
	}

	var h *state.Handoff
	var errs []error
	if p == nil {
		h = buildHandoff(in)
		s.logger().Error("project unreachable: only the handoff archive is written", zap.String("dir", s.projectDir))
	} else if _, err := state.OpenProject(p.Dir(), s.owner); errors.Is(err, state.ErrProjectUnreachable) {
		// A project that is gone, or out of its user's reach: there is
		// nothing to wait for.
		s.warnRecord("the project directory is unreachable: the handoff is only in the state dir")
		s.logger().Error("project unreachable: only the handoff archive is written", zap.Error(err))
		h = buildHandoff(in)
	} else {
		// The account builds on the project's state as the ends before it
		// left it, and is written with those that end together (see
		// state.WriteAccount). Each step may run again after a failure
		// without doubling anything: the files are replaced whole, and the
		// progress entry is appended once per session.
		res := p.WriteAccount(func(prev *state.SessionState, err error) state.AccountWrite {
			if err != nil {
				s.logger().Warn("session state", zap.Error(err))
			}
			in.Previous = prev
			h = buildHandoff(in)
			return state.AccountWrite{Handoff: h, State: buildSessionState(in, h), ProgressFile: s.spec.ProgressFile, Progress: buildProgressEntry(in, h)}
		})
		if h == nil {
			h = buildHandoff(in)
		}
		for _, err := range []error{res.Handoff, res.State} {
			if err != nil {
				errs = append(errs, err)
			}
		}
		if err := res.Progress; err != nil && !errors.Is(err, state.ErrOutsideProject) {
			errs = append(errs, err)
		} else if err != nil {
			s.logger().Error("progress log refused", zap.Error(err))
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
