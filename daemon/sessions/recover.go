package sessions

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/access"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Recover loads the records of earlier runs. A session recorded as live is
// adopted if its process is still alive (same pid, start time and boot),
// else it ended unobserved and is ended (crashed) — or, if the earlier
// daemon had recorded its end, that end is finished.
func (d *Service) Recover() {
	root := filepath.Join(d.cfg.StateDir, "sessions")
	entries, err := os.ReadDir(root)
	if err != nil {
		d.log.Warn("read sessions", zap.Error(err))
		return
	}
	var live []*session.Session
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		var rec ipc.Session
		err := state.ReadJSON(filepath.Join(root, e.Name(), "session.json"), &rec)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				d.log.Warn("skipping unreadable session record", zap.String("dir", e.Name()), zap.Error(err))
			}
			continue
		}
		if rec.ID != e.Name() {
			d.log.Warn("skipping session record with a mismatched id", zap.String("dir", e.Name()), zap.String("id", rec.ID))
			continue
		}
		sp := d.cfg.Defaults.Clone()
		if rec.Spec != nil {
			sp = *rec.Spec
		}
		owner, err := access.Owner(rec.UID)
		var proj *state.Project
		if err == nil {
			proj, err = state.OpenProject(rec.ProjectDir, owner)
		}
		if err != nil {
			d.log.Warn("project of a recorded session unreachable", zap.String("session", rec.ID), zap.Error(err))
		} else if p, err := spec.Project(proj, d.cfg.Defaults.Clone()); err == nil {
			// Env values are never on disk: take the project's and the
			// daemon's again (values given with --env are gone).
			sp.Env = p.Env
		}
		if proj != nil && ipc.Live(rec.State) {
			d.notes.LoadProject(proj)
		}
		s := session.Load(rec, sp, proj, owner, d.deps)
		d.reg.Add(s)
		if ipc.Live(rec.State) {
			live = append(live, s)
		}
	}
	var ending []*session.Session
	for _, s := range live {
		if !d.recoverLive(s) {
			ending = append(ending, s)
		}
	}
	// The ends found are written before the daemon answers, so that
	// nobody sees a dead session as running; they run in parallel.
	deadline := time.After(recoverTimeout)
	for _, s := range ending {
		select {
		case <-s.Done():
		case <-deadline:
			d.log.Warn("ends of crashed sessions still being written", zap.Duration("after", recoverTimeout))
		}
	}
	d.sweepOrphans()
	d.trimHistory()
}

// recoverTimeout bounds the wait for the ends found at start.
const recoverTimeout = time.Minute

// recoverLive adopts a live session (true) or ends one whose process is
// gone (false).
func (d *Service) recoverLive(s *session.Session) bool {
	// A terminal holder is asked over its socket: bounded.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Recover(ctx)
}

// sweepOrphans kills processes of this daemon's sessions (known by the
// socket in their environment) that belong to no live session: a child
// spawned just before a crash, before its record said running, or a
// descendant that outlived its session while no daemon ran.
func (d *Service) sweepOrphans() {
	for pid, id := range proc.SessionsByEnv(d.cfg.Socket) {
		if s := d.reg.Get(id); s != nil {
			if st := s.Snapshot().State; ipc.Live(st) && st != ipc.StateStarting {
				continue
			}
		}
		d.log.Warn("killing a process of no live session", zap.Int("pid", pid), zap.String("session", id))
		_ = proc.Signal(pid, syscall.SIGKILL)
	}
}
