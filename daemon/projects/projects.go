// Package projects is the projects API (ipc.Projects): the projects the
// daemon's sessions ran in, their session state, and their checkpoints —
// listed, restored and measured with the caller's rights.
package projects

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/access"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
	"go.uber.org/zap"
)

// Sessions is what the projects API needs of the daemon's sessions (the
// registry's answers).
type Sessions interface {
	// Records are the records of every session, oldest first.
	Records() []ipc.Session
	// LiveIn is a live session in dir, "" for none.
	LiveIn(dir string) string
	LiveOver(dir string) (id, project string)
}

// Checkpointer lists, restores and measures checkpoints.
type Checkpointer interface {
	Prune(ctx context.Context, req checkpoint.PruneRequest) (int, error)
	Lookup(ctx context.Context, req checkpoint.LookupRequest) (checkpoint.Found, error)
	List(ctx context.Context, req checkpoint.ListRequest) ([]checkpoint.Checkpoint, error)
	Restore(ctx context.Context, req checkpoint.RestoreRequest) (checkpoint.Result, checkpoint.Checkpoint, error)
	Stats(ctx context.Context, req checkpoint.StatsRequest) (checkpoint.Stats, error)
}

// Resolver resolves blockers in a project's live sessions.
type Resolver interface {
	// ResolveLive resolves the blockers ids (or "all") in each live
	// session of dir that c may report to, as its user would from inside
	// it. It returns the sessions told (none: dir has no live session of
	// c's) and the blockers open and resolved in the last of them.
	ResolveLive(ctx context.Context, c ipc.Caller, dir string, ids []string) (told []string, open, resolved []ipc.Blocker, err error)
}

// Service is the projects API.
type Service struct {
	resolver Resolver
	sessions Sessions
	ckpt     Checkpointer
	defaults config.Spec
	clock    session.Clock
	log      *zap.Logger
}

var _ ipc.Projects = (*Service)(nil)

// New returns the projects API over the sessions' records.
func New(sessions Sessions, resolver Resolver, ckpt Checkpointer, defaults config.Spec, clock session.Clock, log *zap.Logger) *Service {
	return &Service{sessions: sessions, resolver: resolver, ckpt: ckpt, defaults: defaults, clock: clock, log: log}
}

// visible reports whether caller c may see a session of uid: root sees
// all, a user sees their own.
func visible(c ipc.Caller, uid int) bool { return c.Root() || c.UID == uid }

// ListProjects implements ipc.Projects.
func (d *Service) ListProjects(ctx context.Context, c ipc.Caller) ([]ipc.Project, error) {
	byID := map[string]*ipc.Project{}
	var order []string
	for _, rec := range d.sessions.Records() {
		if !visible(c, rec.UID) {
			continue
		}
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

// projectFor opens a project with the caller's rights: the directory of
// the sessions the daemon knows by that id, else the one the client sent,
// which must match the id. The caller must own the directory (or be root).
func (d *Service) projectFor(c ipc.Caller, ref ipc.ProjectRef) (*state.Project, error) {
	dir := ""
	for _, rec := range d.sessions.Records() {
		if rec.ProjectID == ref.ID && visible(c, rec.UID) {
			dir = rec.ProjectDir
			break
		}
	}
	if dir == "" && ref.Dir == "" {
		return nil, ipc.NotFound("no project %q (sessionctl takes a directory: it sends both)", ref.ID)
	}
	if dir == "" {
		dir = ref.Dir
	}
	// Root acts in a user's project as that user: what it writes there
	// (the session state a restore updates) stays theirs.
	p, _, err := access.OpenProject(dir, d.projectUser(c, dir))
	if err != nil {
		return nil, err
	}
	if ipc.ProjectID(p.Dir()) != ref.ID {
		return nil, ipc.BadRequest("project id %s does not match directory %s (its id is %s)", ref.ID, p.Dir(), ipc.ProjectID(p.Dir()))
	}
	if err := access.CheckDir(c, p.Dir()); err != nil {
		return nil, err
	}
	return p, nil
}

// ProjectSession implements ipc.Projects.
func (d *Service) ProjectSession(ctx context.Context, c ipc.Caller, p ipc.ProjectRef) (*ipc.ProjectSession, error) {
	proj, err := d.projectFor(c, p)
	if err != nil {
		return nil, err
	}
	dir := proj.Dir()
	st, err := proj.LoadSessionState()
	if err != nil {
		// The corrupt file was kept aside: "no state", and why.
		return nil, ipc.NotFound("%s has no usable session state: %s", dir, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	if st == nil {
		return nil, ipc.NotFound("%s has no session state", dir)
	}
	// Progress and the next task as the feature list stands now, and what
	// changed since the state was written.
	sp, _ := spec.Project(proj, d.defaults.Clone())
	feats, ferr := proj.LoadFeatures(sp.FeatureList)
	view, notes := session.ProjectView(st, feats, ferr)
	return &ipc.ProjectSession{State: *view, Summary: state.RestoreSummary(view, d.clock.Now(), notes...), Notices: notes}, nil
}

// ClearProjectSession implements ipc.Projects.
func (d *Service) ClearProjectSession(ctx context.Context, c ipc.Caller, p ipc.ProjectRef) error {
	proj, err := d.projectFor(c, p)
	if err != nil {
		return err
	}
	if err := proj.ClearSessionState(); err != nil {
		return fmt.Errorf("clear session state of %s: %w", proj.Dir(), err)
	}
	return nil
}

// ResolveBlockers implements ipc.Projects: a person answers the agent's
// question between sessions, or during one from outside it. The live
// sessions of the project are told, whose ends write it; without one,
// the project's session state is changed, in the section every end
// writes in, so that the next context.md and sessionctl state show it.
func (d *Service) ResolveBlockers(ctx context.Context, c ipc.Caller, p ipc.ProjectRef, req ipc.ResolveRequest) (*ipc.ResolveResponse, error) {
	rep, err := session.CleanReport(ipc.Report{Resolve: req.Resolve})
	if err != nil {
		return nil, err
	}
	if len(rep.Resolve) == 0 {
		return nil, ipc.BadRequest("resolve: name a blocker id (sessionctl state lists them) or all")
	}
	proj, err := d.projectFor(c, p)
	if err != nil {
		return nil, err
	}
	told, open, resolved, err := d.resolver.ResolveLive(ctx, c, proj.Dir(), rep.Resolve)
	if err != nil {
		return nil, err
	}
	if len(told) > 0 {
		return &ipc.ResolveResponse{Resolved: resolved, Open: open, Sessions: told}, nil
	}
	resp := &ipc.ResolveResponse{Sessions: []string{}}
	err = proj.Exclusively(func(q *state.Project) error {
		st, err := q.LoadSessionState()
		if err != nil {
			return ipc.Conflict("%s has no usable session state: %s", q.Dir(), strings.ReplaceAll(err.Error(), "\n", " "))
		}
		if st == nil {
			return ipc.NotFound("%s has no session state, so no open blocker", q.Dir())
		}
		open, resolved, _, err := session.ApplyBlockers(st.ActiveBlockers, nil, st.BlockerSeq, rep)
		if err != nil {
			return err
		}
		st.ActiveBlockers = open
		if err := q.SaveSessionState(st); err != nil {
			return fmt.Errorf("write the session state of %s: %w", q.Dir(), err)
		}
		resp.Open, resp.Resolved = open, resolved
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ProjectCheckpoints implements ipc.Projects.
func (d *Service) ProjectCheckpoints(ctx context.Context, c ipc.Caller, p ipc.ProjectRef, opt ipc.CheckpointsOptions) ([]ipc.Checkpoint, error) {
	proj, err := d.projectFor(c, p)
	if err != nil {
		return nil, err
	}
	dir := proj.Dir()
	cred, shadow := d.gitAccess(c, proj.Dir())
	ctx, cancel := context.WithTimeout(ctx, checkpoint.DefaultTimeout)
	defer cancel()
	if opt.Prune > 0 {
		if _, err := d.ckpt.Prune(ctx, checkpoint.PruneRequest{Dir: dir, Keep: opt.Prune, ShadowRoot: shadow, Credential: cred}); err != nil {
			return nil, ipc.Conflict("prune checkpoints of %s: %w", dir, err)
		}
	}
	if opt.Find != "" {
		f, err := d.ckpt.Lookup(ctx, checkpoint.LookupRequest{Dir: dir, ID: opt.Find, ShadowRoot: shadow, Credential: cred})
		if err != nil {
			return nil, ipc.NotFound("checkpoint %s of %s: %w", opt.Find, dir, err)
		}
		cp := f.Checkpoint.Checkpoint
		cp.Match, cp.MatchedID = string(f.Match), f.ID
		return []ipc.Checkpoint{cp}, nil
	}
	list, err := d.ckpt.List(ctx, checkpoint.ListRequest{Dir: dir, ShadowRoot: shadow, Credential: cred})
	if err != nil {
		return nil, ipc.Conflict("list checkpoints of %s: %w", dir, err)
	}
	out := make([]ipc.Checkpoint, len(list))
	for i, cp := range list {
		out[i] = cp.Checkpoint
	}
	return out, nil
}

// RestoreProject implements ipc.Projects.
func (d *Service) RestoreProject(ctx context.Context, c ipc.Caller, p ipc.ProjectRef, req ipc.RestoreRequest) (*ipc.RestoreResponse, error) {
	if req.Checkpoint == "" {
		return nil, ipc.BadRequest("checkpoint: which checkpoint to restore (sessionctl checkpoints DIR lists them)")
	}
	proj, err := d.projectFor(c, p)
	if err != nil {
		return nil, err
	}
	dir := proj.Dir()
	if live, in := d.sessions.LiveOver(dir); live != "" && !req.Force {
		if in == dir {
			return nil, ipc.Conflict("session %s is running in %s: stop it first, or restore with --force", live, dir)
		}
		return nil, ipc.Conflict("session %s is running in %s, whose files a restore of %s reaches: stop it first, or restore with --force", live, in, dir)
	}
	ctx, cancel := context.WithTimeout(ctx, checkpoint.DefaultTimeout)
	defer cancel()
	cred, shadow := d.gitAccess(c, proj.Dir())
	sp, _ := spec.Project(proj, d.defaults.Clone())
	saved, restored, err := d.ckpt.Restore(ctx, checkpoint.RestoreRequest{
		Dir: dir, Checkpoint: req.Checkpoint, MaxFileSize: int64(sp.CheckpointMaxFile), Ignore: sp.Watch.Ignore,
		ShadowRoot: shadow, Credential: cred,
	})
	var unsaved *checkpoint.UnsavedError
	switch {
	case errors.Is(err, checkpoint.ErrUnknownCheckpoint):
		return nil, ipc.NotFound("restore %s to %s: %w", dir, req.Checkpoint, err)
	case errors.As(err, &unsaved):
		return nil, ipc.Conflict("restore %s to %s: %w", dir, req.Checkpoint, unsaved)
	case err != nil:
		return nil, ipc.Conflict("restore %s to %s: %w", dir, req.Checkpoint, err)
	}
	// The next start says the tree was restored, as a cause of what
	// changed in the feature list.
	if st, err := proj.LoadSessionState(); err == nil && st != nil {
		st.LastRestore = &state.Restore{Checkpoint: restored.ID, At: d.clock.Now()}
		if err := proj.SaveSessionState(st); err != nil {
			d.log.Warn("record the restore in the session state", zap.Error(err))
		}
	}
	return &ipc.RestoreResponse{Saved: saved, Restored: restored.Checkpoint}, nil
}

// CheckpointStats implements ipc.Projects.
func (d *Service) CheckpointStats(ctx context.Context, c ipc.Caller, p ipc.ProjectRef) (*ipc.CheckpointStats, error) {
	proj, err := d.projectFor(c, p)
	if err != nil {
		return nil, err
	}
	cred, shadow := d.gitAccess(c, proj.Dir())
	sp, _ := spec.Project(proj, d.defaults.Clone())
	ctx, cancel := context.WithTimeout(ctx, checkpoint.DefaultTimeout)
	defer cancel()
	st, err := d.ckpt.Stats(ctx, checkpoint.StatsRequest{
		Dir: proj.Dir(), MaxFileSize: int64(sp.CheckpointMaxFile), Ignore: sp.Watch.Ignore,
		Largest: 10, ShadowRoot: shadow, Credential: cred,
	})
	if err != nil {
		return nil, ipc.Conflict("checkpoint stats of %s: %w", proj.Dir(), err)
	}
	out := &ipc.CheckpointStats{Checkpoints: st.Checkpoints, Sessions: st.Sessions, Objects: st.Objects, DiskBytes: st.DiskBytes, SizeBytes: st.SizeBytes, LeftOut: []ipc.LeftOut{}}
	for _, l := range st.LeftOut {
		out.LeftOut = append(out.LeftOut, ipc.LeftOut{Path: l.Path, Bytes: l.Bytes, Files: l.Files, Partial: l.Partial})
	}
	return out, nil
}

// gitAccess is how git runs for the caller's project dir
// (session.GitAccess): as the caller, or for root, as the user whose
// project it is.
func (d *Service) gitAccess(c ipc.Caller, dir string) (*checkpoint.Credential, string) {
	owner, err := access.Owner(d.projectUser(c, dir))
	if err != nil {
		// projectFor has already refused an unknown user.
		return nil, ""
	}
	return session.GitAccess(owner)
}

// projectUser is whom a call of c on the project dir acts as: the caller;
// for root, the user of the project's latest session, else the owner of
// the directory. Root's own git in a user's repository would meet git's
// ownership check (and make root's files there).
func (d *Service) projectUser(c ipc.Caller, dir string) int {
	if !c.Root() {
		return c.UID
	}
	uid := -1
	for _, rec := range d.sessions.Records() {
		if rec.ProjectDir == dir {
			uid = rec.UID
		}
	}
	if uid >= 0 {
		return uid
	}
	if fi, err := state.FilesOf(nil).Stat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return int(st.Uid)
		}
	}
	return c.UID
}
