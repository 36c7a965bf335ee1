package session

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/daemon/worktree"
	"github.com/sessiond/sessiond/ipc"
)

// worktreeEnv is what the child of a worktree session is told of it: its
// port ($PORT, for its dev server and sidecars), the worktree and the
// repository.
func worktreeEnv(wt *ipc.Worktree) []string {
	if wt == nil {
		return nil
	}
	env := []string{"SESSIOND_WORKTREE=" + wt.Path, "SESSIOND_WORKTREE_NAME=" + wt.Name,
		"SESSIOND_WORKTREE_BRANCH=" + wt.Branch, "SESSIOND_REPO=" + wt.Repo}
	if wt.Port > 0 {
		env = append(env, fmt.Sprintf("PORT=%d", wt.Port), fmt.Sprintf("SESSIOND_PORT=%d", wt.Port))
	}
	return env
}

// worktreeHandoff is the hand-back of the session's worktree at its end:
// where it is, its branch, the commits it has since its base, what is left
// uncommitted (git's facts of the project, which is the worktree), and the
// command to review it.
func (s *Session) worktreeHandoff(ctx context.Context, g *checkpoint.GitFacts) *state.WorktreeHandoff {
	wt := s.rec.Worktree
	if wt == nil {
		return nil
	}
	h := &state.WorktreeHandoff{Name: wt.Name, Branch: wt.Branch, Path: wt.Path, Repo: wt.Repo, Base: wt.Base, Port: wt.Port,
		Review: worktree.ReviewCommand(wt.Repo, wt.Base, wt.Branch)}
	if g != nil {
		h.Uncommitted = len(g.Uncommitted)
	}
	n, err := worktree.CommitsAhead(ctx, wt.Repo, s.gitCredential(), wt.Base, wt.Branch)
	if err != nil {
		s.logger().Warn("count the worktree's commits", zap.Error(err))
	}
	h.CommitsAhead = n
	return h
}

// worktreeWarnings are what the next session must know of the worktree
// first: the repository's uncommitted work it does not have.
func worktreeWarnings(wt *ipc.Worktree) []string {
	if wt == nil || wt.RepoUncommitted == 0 {
		return nil
	}
	return []string{fmt.Sprintf("worktree %s started from HEAD of %s, which had %s then: they are not in the worktree",
		wt.Name, wt.Repo, plural(wt.RepoUncommitted, "uncommitted file"))}
}
