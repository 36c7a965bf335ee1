package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// ListProjects implements ipc.Projects.
func (d *Daemon) ListProjects(ctx context.Context, c ipc.Caller) ([]ipc.Project, error) {
	byID := map[string]*ipc.Project{}
	var order []string
	for _, s := range d.reg.all() {
		if !visible(c, s) {
			continue
		}
		rec := s.Snapshot()
		p := byID[rec.ProjectID]
		if p == nil {
			p = &ipc.Project{ID: rec.ProjectID, Dir: rec.ProjectDir}
			byID[rec.ProjectID] = p
			order = append(order, rec.ProjectID)
		}
		p.Sessions++
		p.LastSession = rec.ID
		if ipc.Live(rec.State) {
			p.Live++
		}
		if rec.EndedAt != nil && rec.EndedAt.After(p.LastEnd) {
			p.LastEnd = *rec.EndedAt
		}
	}
	out := make([]ipc.Project, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out, nil
}

// projectFor resolves a project to its directory: from the sessions the
// daemon knows, else from the directory the client sent, which must match
// the id. The caller must own the directory (or be root).
func (d *Daemon) projectFor(c ipc.Caller, p ipc.ProjectRef) (string, error) {
	dir := ""
	for _, s := range d.reg.all() {
		if s.Snapshot().ProjectID == p.ID && visible(c, s) {
			dir = s.ProjectDir()
			break
		}
	}
	if dir == "" {
		if p.Dir == "" {
			return "", ipc.NotFound("no project %q (sessionctl takes a directory: it sends both)", p.ID)
		}
		abs, err := projectDir(p.Dir)
		if err != nil {
			return "", err
		}
		if ipc.ProjectID(abs) != p.ID {
			return "", ipc.BadRequest("project id %s does not match directory %s (its id is %s)", p.ID, abs, ipc.ProjectID(abs))
		}
		dir = abs
	}
	if !c.Root() && c.UID != os.Geteuid() {
		if fi, err := os.Stat(dir); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != c.UID {
				return "", ipc.Forbidden("project %s belongs to another user", dir)
			}
		}
	}
	return dir, nil
}

// ProjectSession implements ipc.Projects.
func (d *Daemon) ProjectSession(ctx context.Context, c ipc.Caller, p ipc.ProjectRef) (*ipc.ProjectSession, error) {
	dir, err := d.projectFor(c, p)
	if err != nil {
		return nil, err
	}
	st, err := state.LoadSessionState(dir)
	if err != nil {
		// The corrupt file was kept aside: "no state", and why.
		return nil, ipc.NotFound("%s has no usable session state: %s", dir, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	if st == nil {
		return nil, ipc.NotFound("%s has no session state", dir)
	}
	out := &ipc.ProjectSession{Summary: state.RestoreSummary(st, time.Now())}
	if err := convert(st, &out.State); err != nil {
		return nil, err
	}
	return out, nil
}

// ClearProjectSession implements ipc.Projects.
func (d *Daemon) ClearProjectSession(ctx context.Context, c ipc.Caller, p ipc.ProjectRef) error {
	dir, err := d.projectFor(c, p)
	if err != nil {
		return err
	}
	if err := state.ClearSessionState(dir); err != nil {
		return fmt.Errorf("clear session state of %s: %w", dir, err)
	}
	return nil
}

// ProjectCheckpoints implements ipc.Projects.
func (d *Daemon) ProjectCheckpoints(ctx context.Context, c ipc.Caller, p ipc.ProjectRef, opt ipc.CheckpointsOptions) ([]ipc.Checkpoint, error) {
	dir, err := d.projectFor(c, p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, checkpoint.DefaultTimeout)
	defer cancel()
	if opt.Prune > 0 {
		if _, err := d.ckpt.Prune(ctx, dir, opt.Prune); err != nil {
			return nil, ipc.Conflict("prune checkpoints of %s: %w", dir, err)
		}
	}
	list, err := d.ckpt.List(ctx, dir)
	if err != nil {
		return nil, ipc.Conflict("list checkpoints of %s: %w", dir, err)
	}
	out := make([]ipc.Checkpoint, len(list))
	for i, cp := range list {
		out[i] = wireCheckpoint(cp)
	}
	return out, nil
}

// RestoreProject implements ipc.Projects.
func (d *Daemon) RestoreProject(ctx context.Context, c ipc.Caller, p ipc.ProjectRef, req ipc.RestoreRequest) (*ipc.RestoreResponse, error) {
	if req.Checkpoint == "" {
		return nil, ipc.BadRequest("checkpoint: which checkpoint to restore (sessionctl checkpoints DIR lists them)")
	}
	dir, err := d.projectFor(c, p)
	if err != nil {
		return nil, err
	}
	if live := d.reg.live(dir); len(live) > 0 && !req.Force {
		return nil, ipc.Conflict("session %s is running in %s: stop it first, or restore with --force", live[0].ID(), dir)
	}
	ctx, cancel := context.WithTimeout(ctx, checkpoint.DefaultTimeout)
	defer cancel()
	saved, restored, err := d.ckpt.Restore(ctx, dir, req.Checkpoint)
	if err != nil {
		return nil, ipc.Conflict("restore %s to %s: %w", dir, req.Checkpoint, err)
	}
	return &ipc.RestoreResponse{Saved: ipc.CheckpointResult(saved), Restored: wireCheckpoint(restored)}, nil
}

func wireCheckpoint(c checkpoint.Checkpoint) ipc.Checkpoint {
	return ipc.Checkpoint{ID: c.ID, SessionID: c.SessionID, Time: c.Time, FilesChanged: c.FilesChanged, Message: c.Message, Ref: c.Ref}
}

// convert copies a file format into its wire type through their common
// JSON encoding, which is what both promise to keep.
func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
