package ipc

import (
	"context"
	"net/url"
	"time"
)

// Worktree states of WorktreeInfo.State.
const (
	// WorktreeActive: a live session runs in it.
	WorktreeActive = "active"
	// WorktreeIdle: kept for the hand-back, no session running.
	WorktreeIdle = "idle"
	// WorktreeMissing: its directory was deleted by hand.
	WorktreeMissing = "missing"
	// WorktreeBusy: being made or removed.
	WorktreeBusy = "busy"
)

// WorktreeInfo is a worktree as sessionctl worktrees lists it.
type WorktreeInfo struct {
	Worktree
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	// CommitsAhead counts the branch's commits since Base;
	// UncommittedFiles is what git status shows in it.
	CommitsAhead     int      `json:"commits_ahead"`
	UncommittedFiles []string `json:"uncommitted_files"`
	// Review is the command that shows the branch's work:
	// git diff BASE...sessiond/NAME, in the repository.
	Review string `json:"review"`
	// Sessions are the sessions that ran in it, newest first.
	Sessions []WorktreeSession `json:"sessions"`
	// Error says what could not be found out about it.
	Error string `json:"error,omitempty"`
}

// WorktreeSession is a session of a worktree.
type WorktreeSession struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	State     string    `json:"state"`
	EndReason string    `json:"end_reason,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// WorktreeRemoveRequest asks to remove a worktree: Repo says which
// repository's when the name is not enough; Force removes uncommitted
// work too, after a checkpoint of it.
type WorktreeRemoveRequest struct {
	Repo  string `json:"repo,omitempty"`
	Force bool   `json:"force,omitempty"`
}

// WorktreeRemoved says what a removal did.
type WorktreeRemoved struct {
	Worktree Worktree `json:"worktree"`
	// Pruned: the directory was gone already; only git's record of it was
	// removed.
	Pruned bool `json:"pruned"`
	// BranchDeleted: the branch went too; a branch with commits of its own
	// (CommitsAhead) is kept.
	BranchDeleted bool `json:"branch_deleted"`
	CommitsAhead  int  `json:"commits_ahead"`
	// Checkpoint is the checkpoint that holds the uncommitted work removed
	// with --force, on Ref.
	Checkpoint string   `json:"checkpoint,omitempty"`
	Ref        string   `json:"ref,omitempty"`
	Discarded  []string `json:"discarded,omitempty"`
}

// Worktrees is the worktree API: /v1/worktrees and below.
type Worktrees interface {
	// ListWorktrees lists the caller's worktrees (root: everyone's), of
	// the repository repo if it is not "".
	ListWorktrees(ctx context.Context, c Caller, repo string) ([]WorktreeInfo, error)
	RemoveWorktree(ctx context.Context, c Caller, name string, req WorktreeRemoveRequest) (*WorktreeRemoved, error)
}

// Worktrees lists worktrees, of the repository repo if it is not "".
func (c *Client) Worktrees(ctx context.Context, repo string) ([]WorktreeInfo, error) {
	q := url.Values{}
	if repo != "" {
		q.Set("repo", repo)
	}
	return do[[]WorktreeInfo](ctx, c, "GET", "/worktrees", q, nil)
}

// RemoveWorktree removes the worktree name.
func (c *Client) RemoveWorktree(ctx context.Context, name string, req WorktreeRemoveRequest) (*WorktreeRemoved, error) {
	q := url.Values{}
	if req.Repo != "" {
		q.Set("repo", req.Repo)
	}
	if req.Force {
		q.Set("force", "1")
	}
	return do[*WorktreeRemoved](ctx, c, "DELETE", "/worktrees/"+url.PathEscape(name), q, nil)
}
