package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
)

// StateRemoving is a worktree being removed.
const StateRemoving = "removing"

// RemoveRequest asks to remove the worktree Key.
type RemoveRequest struct {
	Key Key
	// Owner and Credential are the worktree user's identity.
	Owner      *state.Owner
	Credential *checkpoint.Credential
	// Force removes uncommitted work too (the caller checkpoints it
	// first).
	Force bool
	// Check, if set, runs once the worktree is marked as being removed
	// (no session can take it from then on) and before anything goes: an
	// error stops the removal. The daemon looks for a live session there.
	Check func() error
}

// Removed says what Remove did.
type Removed struct {
	Entry Entry
	// Pruned is set when the directory was gone already and only git's
	// record of it was removed.
	Pruned bool
	// BranchDeleted is set when the branch went with it; a branch with
	// commits of its own (Ahead) is kept.
	BranchDeleted bool
	Ahead         int
	// Discarded lists the uncommitted files that went (with Force).
	Discarded []string
}

// removeTimeout bounds the git commands of one Remove.
const removeTimeout = 2 * time.Minute

// Remove removes a worktree: its directory (git worktree remove), or only
// git's record of it when the directory was deleted (git worktree prune);
// its branch when it holds no commit the base does not have; its port and
// its entry. Uncommitted work is refused with an *UncommittedError unless
// req.Force.
func (m *Manager) Remove(ctx context.Context, req RemoveRequest) (Removed, error) {
	ctx, cancel := context.WithTimeout(ctx, removeTimeout)
	defer cancel()
	e, ok := m.Get(req.Key)
	switch {
	case !ok:
		return Removed{}, fmt.Errorf("worktree %s: %w", req.Key, ErrUnknown)
	case e.State != StateReady:
		return Removed{}, fmt.Errorf("worktree %s: %w (%s)", req.Key, ErrBusy, e.State)
	}
	out := Removed{Entry: e}
	if _, err := os.Lstat(e.Path); errors.Is(err, fs.ErrNotExist) {
		out.Pruned = true
	} else {
		facts, err := checkpoint.Facts(ctx, checkpoint.FactsRequest{Dir: e.Path, Credential: req.Credential})
		if err != nil && !req.Force {
			return out, fmt.Errorf("look for uncommitted work in worktree %s: %w (remove it with --force regardless)", e.Name, err)
		}
		if len(facts.Uncommitted) > 0 {
			if !req.Force {
				return out, &UncommittedError{Name: e.Name, Files: facts.Uncommitted}
			}
			out.Discarded = facts.Uncommitted
		}
	}
	if err := m.update(req.Key, func(x *Entry) { x.State = StateRemoving }); err != nil {
		return out, err
	}
	undo := func(err error) (Removed, error) {
		if uerr := m.update(req.Key, func(x *Entry) { x.State = StateReady }); uerr != nil {
			return out, errors.Join(err, uerr)
		}
		return out, err
	}
	if req.Check != nil {
		if err := req.Check(); err != nil {
			return undo(err)
		}
	}
	if err := removeDir(ctx, e, req.Owner, req.Credential); err != nil {
		return undo(fmt.Errorf("remove worktree %s: %w", e.Name, err))
	}
	if exists, err := branchExists(ctx, e.Repo, req.Credential, e.Branch); err != nil {
		return undo(err)
	} else if exists {
		n, err := CommitsAhead(ctx, e.Repo, req.Credential, e.Base, e.Branch)
		if err != nil {
			return undo(err)
		}
		out.Ahead = n
		if n == 0 {
			if _, err := git(ctx, e.Repo, req.Credential, "branch", "-D", e.Branch); err != nil {
				return undo(err)
			}
			out.BranchDeleted = true
		}
	}
	removeEmptyParent(req.Owner, e.Path)
	if err := m.forget(req.Key); err != nil {
		return out, err
	}
	return out, nil
}
