package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
)

// Access returns the identity of user uid for files and for git (nil,
// nil: the daemon's own).
type Access func(uid int) (*state.Owner, *checkpoint.Credential, error)

// Recover settles what a daemon that stopped (or crashed) left: a
// worktree cut short while being made is rolled back (a new one entirely;
// one being made again back to its branch without a directory), one cut
// short while being removed is ready again (or gone, if its directory
// is), and a port held by a session that is not live (live says which
// are) is released.
func (m *Manager) Recover(ctx context.Context, live func(session string) bool, access Access) {
	for _, e := range m.List() {
		log := m.log.With(zap.String("worktree", e.Name), zap.String("repo", e.Repo))
		switch e.State {
		case StateCreating:
			owner, cred, err := access(e.UID)
			if err != nil {
				log.Warn("cannot roll back a worktree cut short: its user is unknown", zap.Error(err))
				continue
			}
			if err := m.rollback(ctx, e, owner, cred, !e.Remake); err != nil {
				log.Warn("roll back a worktree cut short", zap.Error(err))
				continue
			}
			log.Info("rolled back a worktree a crash cut short")
			continue
		case StateRemoving:
			if _, err := os.Lstat(e.Path); errors.Is(err, fs.ErrNotExist) {
				if _, cred, err := access(e.UID); err == nil {
					_, _ = git(ctx, e.Repo, cred, "worktree", "prune")
				}
				if err := m.forget(e.Key()); err != nil {
					log.Warn("drop a removed worktree", zap.Error(err))
				}
				continue
			}
			if err := m.update(e.Key(), func(x *Entry) { x.State = StateReady }); err != nil {
				log.Warn("settle a worktree cut short while being removed", zap.Error(err))
			}
		}
		if e.Port != 0 && (e.Holder == "" || !live(e.Holder)) {
			if err := m.Release(e.Key(), e.Holder); err != nil {
				log.Warn("release the port of an ended session", zap.Error(err))
			}
		}
	}
}
