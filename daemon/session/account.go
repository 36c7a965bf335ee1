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
		in.Worktree = s.worktreeHandoff(ctx, in.Git)
	}

	var h *state.Handoff
	var errs []error
	var res state.AccountResult
	if p != nil {
		// The account builds on the project's state as the ends before it
		// left it, and is written with those that end together (see
		// state.WriteAccount), the project opened once for all it reads
		// and writes. Each step may run again after a failure without
		// doubling anything: the files are replaced whole, and the
		// progress entry is appended once per session.
		res = p.WriteAccount(func(q *state.Project, prev *state.SessionState, err error) state.AccountWrite {
			if err != nil {
				s.logger().Warn("session state", zap.Error(err))
			}
			s.keepChanged(&in, q.Existing(in.Rec.FilesChanged))
			in.Features, in.FeaturesErr = q.LoadFeatures(s.spec.FeatureList)
			in.Previous = prev
			h = buildHandoff(&in)
			return state.AccountWrite{Handoff: h, State: buildSessionState(&in, h), ProgressFile: s.spec.ProgressFile, Progress: buildProgressEntry(&in, h), Release: s.id}
		})
		if res.Release != nil {
			s.logger().Debug("release the project", zap.Error(res.Release))
		}
	}
	switch {
	case p == nil:
		h = buildHandoff(&in)
		s.logger().Error("project unreachable: only the handoff archive is written", zap.String("dir", s.projectDir))
	case errors.Is(res.Handoff, state.ErrProjectUnreachable):
		// A project that is gone, or out of its user's reach: there is
		// nothing to wait for.
		s.warnRecord("the project directory is unreachable: the handoff is only in the state dir")
		s.logger().Error("project unreachable: only the handoff archive is written", zap.Error(res.Handoff))
		s.keepChanged(&in, nil)
		in.FeaturesErr = errProjectGone
		h = buildHandoff(&in)
	default:
		if h == nil {
			h = buildHandoff(&in)
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

// keepChanged keeps, of the files the session changed, those that exist
// (existing) and the tracked ones it deleted, which git lists: not the
// temporary files made and removed on the way.
func (s *Session) keepChanged(in *accountInput, existing []string) {
	keep := existing
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
}

// errProjectGone stands for the feature list of a project that could not
// be opened.
var errProjectGone = errors.New("the project directory is unreachable")
