package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/daemon/worktree"
	"github.com/sessiond/sessiond/ipc"
)

// The daemon's side of worktrees (package worktree): a start that asks
// for one gets it made or reused before its session, the session holds
// the worktree's port while it is live, and the API lists and removes
// them.

// openWorktrees opens the worktree index of the state dir; a corrupt one
// is kept aside and rebuilt from the session records (adoptWorktrees).
func openWorktrees(stateDir string, log *zap.Logger) *worktree.Manager {
	m, err := worktree.Open(worktree.Options{StateDir: stateDir, Log: log})
	if err != nil {
		log.Warn("worktree index unreadable: rebuilt from the session records", zap.Error(err))
	}
	return m
}

// worktreeStart is the worktree of one start: made or reused before the
// session is created, and undone if the session does not start.
type worktreeStart struct {
	entry   worktree.Entry
	created bool
	owner   *state.Owner
	cred    *checkpoint.Credential
	project *state.Project
	// id is the session's id, chosen before the worktree that may be
	// named after it.
	id      string
	notices []string
}

// wire is the record's account of the worktree.
func (w *worktreeStart) wire() *ipc.Worktree {
	if w == nil {
		return nil
	}
	return wireWorktree(w.entry)
}

func wireWorktree(e worktree.Entry) *ipc.Worktree {
	return &ipc.Worktree{Name: e.Name, Branch: e.Branch, Path: e.Path, Repo: e.Repo, Base: e.Base, Port: e.Port,
		From: e.From, RepoUncommitted: e.RepoUncommitted}
}

func (w *worktreeStart) noticeList() []string {
	if w == nil {
		return nil
	}
	return w.notices
}

func (w *worktreeStart) sessionID() string {
	if w == nil {
		return ""
	}
	return w.id
}

// startWorktree readies the worktree a start asks for (--worktree, or the
// spec's worktree key), or the one DIR already is; nil when the session
// runs in DIR itself.
func (d *Daemon) startWorktree(ctx context.Context, c ipc.Caller, p *state.Project, owner *state.Owner, spec config.Spec, req ipc.StartRequest) (*worktreeStart, error) {
	if e, ok := d.worktrees.ByPath(p.Dir()); ok && (!req.Worktree || req.WorktreeName == "" || req.WorktreeName == e.Name) {
		// DIR is a worktree of sessiond's: the session runs there again.
		if e.UID != c.UID && !c.Root() {
			return nil, ipc.Forbidden("worktree %s belongs to uid %d, not to you (uid %d)", e.Name, e.UID, c.UID)
		}
		return &worktreeStart{entry: e, owner: owner, project: p, id: d.reg.newID()}, nil
	}
	opt := spec.Worktree
	if req.Worktree {
		opt = config.WorktreeOption{Enabled: true, Name: req.WorktreeName}
	}
	if !opt.Enabled {
		return nil, nil
	}
	w := &worktreeStart{owner: owner, id: d.reg.newID()}
	name := opt.Name
	if name == "" {
		name = w.id
	}
	w.cred, _ = session.GitAccess(owner)
	home := ""
	if w.cred != nil {
		home = w.cred.Home
	} else if h, err := os.UserHomeDir(); err == nil {
		home = h
	}
	root, err := worktree.Dir(spec.WorktreeDir, d.cfg.StateDir, home, owner != nil)
	if err != nil {
		return nil, ipc.BadRequest("%w", err)
	}
	if rel, err := filepath.Rel(p.Dir(), root); err == nil && spec.WorktreeDir == "" && filepath.IsLocal(rel) && home != "" {
		// A state dir inside the project (sessiond exec's default): the
		// worktrees go where the user's own daemon keeps them.
		root = filepath.Join(home, ".local", "state", "sessiond", "worktrees")
	}
	prep, err := d.worktrees.Prepare(ctx, worktree.PrepareRequest{
		Dir: p.Dir(), Name: name, From: req.From, Root: root, UID: c.UID, Owner: owner, Credential: w.cred,
		Setup: spec.WorktreeSetup, Env: setupEnv(spec, w.cred), Ports: spec.PortRange,
	})
	if err != nil {
		return nil, worktreeError(err)
	}
	w.entry, w.created, w.notices = prep.Entry, prep.Created, prep.Notices
	if prep.Created || prep.Remade {
		d.log.Info("worktree ready", zap.String("worktree", prep.Entry.Name), zap.String("repo", prep.Entry.Repo),
			zap.String("path", prep.Entry.Path), zap.Int("copied", prep.Copied), zap.Int("setup", prep.SetupRan))
	}
	wp, _, err := d.openProject(prep.Entry.Path, c.UID)
	if err != nil {
		w.undo(d)
		return nil, err
	}
	w.project = wp
	return w, nil
}

// setupEnv is the environment of worktree_setup commands: the session's
// base, with the user's HOME when a root daemon runs them for the user.
func setupEnv(spec config.Spec, cred *checkpoint.Credential) []string {
	env := session.EnvBase(spec)
	if cred != nil && cred.Home != "" {
		env = append(env, cred.Env()...)
	}
	return env
}

// undo removes a worktree made for a start that did not happen, and lets
// go of a port it held; a reused one stays as it was.
func (w *worktreeStart) undo(d *Daemon) {
	if w == nil {
		return
	}
	k := w.entry.Key()
	if !w.created {
		_ = d.worktrees.Release(k, "")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d.worktrees.Remove(ctx, worktree.RemoveRequest{Key: k, Owner: w.owner, Credential: w.cred, Force: true}); err != nil {
		d.log.Warn("remove the worktree of a start that failed", zap.String("worktree", k.Name), zap.Error(err))
	}
}

// holdWorktree gives a launching session its worktree's port; the
// worktree must still be there.
func (d *Daemon) holdWorktree(wt *ipc.Worktree, id string, r config.PortRange) (*ipc.Worktree, error) {
	k := worktree.Key{Repo: wt.Repo, Name: wt.Name}
	e, ok := d.worktrees.Get(k)
	if !ok {
		return nil, ipc.Conflict("worktree %s of %s was removed: start a new one (sessionctl start --worktree=%s %s)", wt.Name, wt.Repo, wt.Name, wt.Repo)
	}
	if _, err := os.Lstat(e.Path); err != nil {
		return nil, ipc.Conflict("worktree %s: its directory %s is gone (%v): make it again with sessionctl start --worktree=%s %s, or remove it with sessionctl worktree rm %s",
			e.Name, e.Path, errors.Unwrap(err), e.Name, e.Repo, e.Name)
	}
	port, err := d.worktrees.Hold(k, id, r)
	if err != nil {
		return nil, worktreeError(err)
	}
	out := *wt
	out.Port = port
	return &out, nil
}

// releaseWorktree lets go of the port an ended session's worktree held.
func (d *Daemon) releaseWorktree(s *session.Session) {
	wt := s.Snapshot().Worktree
	if wt == nil {
		return
	}
	if err := d.worktrees.Release(worktree.Key{Repo: wt.Repo, Name: wt.Name}, s.ID()); err != nil {
		d.log.Warn("release a worktree's port", zap.String("session", s.ID()), zap.Error(err))
	}
}

// recoverWorktrees settles the worktrees after the sessions are
// recovered: entries a lost index forgot come back from the session
// records (those whose directory is still there), half-made worktrees are
// rolled back, ports of sessions that are not live are released.
func (d *Daemon) recoverWorktrees() {
	for _, s := range d.reg.all() {
		if d.worktrees.Loaded() {
			break
		}
		rec := s.Snapshot()
		wt := rec.Worktree
		if wt == nil {
			continue
		}
		e := worktree.Entry{Name: wt.Name, Branch: wt.Branch, Path: wt.Path, Repo: wt.Repo, Base: wt.Base, From: wt.From,
			UID: s.UID(), Session: s.ID(), RepoUncommitted: wt.RepoUncommitted, CreatedAt: rec.StartedAt}
		if ipc.Live(rec.State) {
			e.Port, e.Holder = wt.Port, s.ID()
		}
		if _, err := os.Lstat(wt.Path); err != nil {
			continue
		}
		if err := d.worktrees.Adopt(e); err != nil {
			d.log.Warn("rebuild a worktree's entry", zap.String("worktree", wt.Name), zap.Error(err))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d.worktrees.Recover(ctx, d.reg.isLive, accessOf)
}

// worktreeError turns a worktree error into the API error a client sees.
func worktreeError(err error) error {
	var ae *ipc.Error
	switch {
	case errors.As(err, &ae):
		return err
	case errors.Is(err, worktree.ErrBranchExists), errors.Is(err, worktree.ErrPathExists), errors.Is(err, worktree.ErrBusy),
		errors.Is(err, worktree.ErrNoPort), errors.Is(err, worktree.ErrMissing), errors.Is(err, worktree.ErrUncommitted):
		return ipc.Conflict("%w", err)
	case errors.Is(err, worktree.ErrUnknown):
		return ipc.NotFound("%w", err)
	}
	return ipc.BadRequest("%w", err)
}

// accessOf is the identity worktree uid's git and files run with.
func accessOf(uid int) (*state.Owner, *checkpoint.Credential, error) {
	owner, err := ownerFor(uid)
	if err != nil {
		return nil, nil, ipc.Forbidden("%w", err)
	}
	cred, _ := session.GitAccess(owner)
	return owner, cred, nil
}

// visibleWorktrees are the entries c may see, of the repository repo if
// it is not "" (a repository's directory, one inside it, or one of its
// worktrees).
func (d *Daemon) visibleWorktrees(c ipc.Caller, repo string) []worktree.Entry {
	if e, ok := d.worktrees.ByPath(repo); ok {
		repo = e.Repo
	}
	var out []worktree.Entry
	for _, e := range d.worktrees.List() {
		if !c.Root() && e.UID != c.UID {
			continue
		}
		if repo != "" && e.Repo != repo && !strings.HasPrefix(repo, e.Repo+string(filepath.Separator)) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// ListWorktrees implements ipc.Worktrees.
func (d *Daemon) ListWorktrees(ctx context.Context, c ipc.Caller, repo string) ([]ipc.WorktreeInfo, error) {
	if repo != "" && !filepath.IsAbs(repo) {
		return nil, ipc.BadRequest("repository %q is not an absolute path", repo)
	}
	byPath := map[string][]ipc.WorktreeSession{}
	live := map[string]bool{}
	all := d.reg.all()
	for i := len(all) - 1; i >= 0; i-- {
		rec := all[i].Snapshot()
		if rec.Worktree == nil {
			continue
		}
		byPath[rec.Worktree.Path] = append(byPath[rec.Worktree.Path], ipc.WorktreeSession{
			ID: rec.ID, Name: rec.Name, State: rec.State, EndReason: rec.EndReason, StartedAt: rec.StartedAt})
		if ipc.Live(rec.State) {
			live[rec.Worktree.Path] = true
		}
	}
	out := []ipc.WorktreeInfo{}
	for _, e := range d.visibleWorktrees(c, repo) {
		info := ipc.WorktreeInfo{Worktree: *wireWorktree(e), CreatedAt: e.CreatedAt, Sessions: byPath[e.Path], UncommittedFiles: []string{}}
		if info.Port == 0 {
			info.Port = e.LastPort
		}
		if info.Sessions == nil {
			info.Sessions = []ipc.WorktreeSession{}
		}
		_, cred, err := accessOf(e.UID)
		var st worktree.Status
		if err == nil {
			st, err = worktree.StatusOf(ctx, e, cred)
		}
		if err != nil {
			info.Error = err.Error()
		}
		info.CommitsAhead, info.Review = st.Ahead, worktree.ReviewCommand(e.Repo, e.Base, e.Branch)
		if st.Uncommitted != nil {
			info.UncommittedFiles = st.Uncommitted
		}
		switch {
		case e.State != worktree.StateReady:
			info.State = ipc.WorktreeBusy
		case live[e.Path]:
			info.State = ipc.WorktreeActive
		case st.Missing:
			info.State = ipc.WorktreeMissing
		default:
			info.State = ipc.WorktreeIdle
		}
		out = append(out, info)
	}
	return out, nil
}

// RemoveWorktree implements ipc.Worktrees: a worktree with a live session
// is refused; one with uncommitted work too, unless req.Force, which first
// checkpoints that work on the last session's checkpoint ref (the
// repository keeps it after the worktree is gone).
func (d *Daemon) RemoveWorktree(ctx context.Context, c ipc.Caller, name string, req ipc.WorktreeRemoveRequest) (*ipc.WorktreeRemoved, error) {
	if err := config.CheckWorktreeName(name); err != nil {
		return nil, ipc.BadRequest("%w", err)
	}
	if req.Repo != "" && !filepath.IsAbs(req.Repo) {
		return nil, ipc.BadRequest("repository %q is not an absolute path", req.Repo)
	}
	var found []worktree.Entry
	for _, e := range d.visibleWorktrees(c, req.Repo) {
		if e.Name == name {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return nil, ipc.NotFound("no worktree %q (sessionctl worktrees lists them)", name)
	case 1:
	default:
		var repos []string
		for _, e := range found {
			repos = append(repos, e.Repo)
		}
		sort.Strings(repos)
		return nil, ipc.BadRequest("worktree %q is in %d repositories (%s): say which with --repo", name, len(repos), strings.Join(repos, ", "))
	}
	e := found[0]
	if live := d.reg.live(e.Path); len(live) > 0 {
		return nil, ipc.Conflict("worktree %s has a live session (%s): stop it first (sessionctl stop %s)", name, live[0].ID(), live[0].ID())
	}
	owner, cred, err := accessOf(e.UID)
	if err != nil {
		return nil, err
	}
	// Checked again once no start can take the worktree: one may have
	// begun since the check above.
	busy := func() error {
		if live := d.reg.live(e.Path); len(live) > 0 {
			return ipc.Conflict("worktree %s has a live session (%s): stop it first (sessionctl stop %s)", name, live[0].ID(), live[0].ID())
		}
		return nil
	}
	rr := worktree.RemoveRequest{Key: e.Key(), Owner: owner, Credential: cred, Check: busy}
	out := &ipc.WorktreeRemoved{Worktree: *wireWorktree(e)}
	res, err := d.worktrees.Remove(ctx, rr)
	var ue *worktree.UncommittedError
	if errors.As(err, &ue) {
		if !req.Force {
			return nil, ipc.Conflict("worktree %s has %d uncommitted files (%s): commit them in %s, or remove it with --force (a checkpoint keeps them first)",
				name, len(ue.Files), listSome(ue.Files, 5), e.Path)
		}
		cp, err := d.checkpointWorktree(ctx, e, cred)
		if err != nil {
			return nil, ipc.Conflict("worktree %s: checkpoint its uncommitted work before removing it: %w; nothing was removed", name, err)
		}
		out.Checkpoint, out.Ref = cp.ID, cp.Ref
		rr.Force = true
		res, err = d.worktrees.Remove(ctx, rr)
		if err != nil {
			return nil, worktreeError(err)
		}
	} else if err != nil {
		return nil, worktreeError(err)
	}
	out.Pruned, out.BranchDeleted, out.CommitsAhead, out.Discarded = res.Pruned, res.BranchDeleted, res.Ahead, res.Discarded
	return out, nil
}

// checkpointWorktree checkpoints a worktree's work tree on the ref of its
// last session (or, for one no session ran in, a ref named after it).
func (d *Daemon) checkpointWorktree(ctx context.Context, e worktree.Entry, cred *checkpoint.Credential) (checkpoint.Result, error) {
	id := e.Session
	if id == "" {
		id = "worktree-" + e.Name
	}
	ctx, cancel := context.WithTimeout(ctx, checkpoint.DefaultTimeout)
	defer cancel()
	return d.ckpt.Take(ctx, checkpoint.TakeRequest{Dir: e.Path, SessionID: id, Credential: cred,
		Message: "worktree " + e.Name + " removed with --force: its uncommitted work"})
}

// listSome names the first n items and how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
