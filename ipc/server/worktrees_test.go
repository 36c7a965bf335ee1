package server

import (
	"context"
	"errors"
	"testing"

	"github.com/sessiond/sessiond/ipc"
)

func (b *backend) ListWorktrees(ctx context.Context, c ipc.Caller, repo string) ([]ipc.WorktreeInfo, error) {
	if repo == "/none" {
		return nil, nil
	}
	return []ipc.WorktreeInfo{{Worktree: ipc.Worktree{Name: "a", Repo: repo}, State: ipc.WorktreeIdle}}, nil
}

func (b *backend) RemoveWorktree(ctx context.Context, c ipc.Caller, name string, req ipc.WorktreeRemoveRequest) (*ipc.WorktreeRemoved, error) {
	if !req.Force {
		return nil, ipc.Conflict("worktree %s has uncommitted changes", name)
	}
	return &ipc.WorktreeRemoved{Worktree: ipc.Worktree{Name: name, Repo: req.Repo}, BranchDeleted: true}, nil
}

func TestWorktreeRoutes(t *testing.T) {
	c, _ := serve(t, &backend{}, nil)
	ctx := context.Background()
	list, err := c.Worktrees(ctx, "/r")
	if err != nil || len(list) != 1 || list[0].Name != "a" || list[0].Repo != "/r" {
		t.Errorf("worktrees = %+v, %v", list, err)
	}
	if list, err := c.Worktrees(ctx, "/none"); err != nil || list == nil || len(list) != 0 {
		t.Errorf("no worktrees = %#v, %v; want an empty list", list, err)
	}
	if _, err := c.RemoveWorktree(ctx, "x/y", ipc.WorktreeRemoveRequest{}); !errors.Is(err, ipc.ErrConflict) {
		t.Errorf("remove without force: err = %v, want a conflict", err)
	}
	got, err := c.RemoveWorktree(ctx, "a.b", ipc.WorktreeRemoveRequest{Repo: "/r", Force: true})
	if err != nil || got.Worktree.Name != "a.b" || got.Worktree.Repo != "/r" || !got.BranchDeleted {
		t.Errorf("remove --force = %+v, %v", got, err)
	}
}
