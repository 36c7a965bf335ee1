package worktree

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
	"github.com/sessiond/sessiond/daemon/access"
	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Service is the daemon's side of worktrees: a start that asks for one
// gets it made or reused before its session, the session holds the
// worktree's port while it is live, and the API (ipc.Worktrees) lists and
// removes them.
type Service struct {
	m        *Manager
	sessions Sessions
	ckpt     Checkpointer
	stateDir string
	log      *zap.Logger
	// cgroups contains the setup commands in their session's cgroup.
	cgroups *cgroup.Host
}

var _ ipc.Worktrees = (*Service)(nil)

// Sessions is what the worktrees need to know of the daemon's sessions
// (the registry's answers).
type Sessions interface {
	// Records are the records of every session, oldest first.
	Records() []ipc.Session
	// LiveIn is a live session in dir, "" for none.
	LiveIn(dir string) string
	// IsLive reports whether the session id is live.
	IsLive(id string) bool
	// NewID is a fresh session id, for a worktree named after its session.
	NewID() string
}

// Checkpointer takes the checkpoint of a worktree removed with its work.
type Checkpointer interface {
	Take(ctx context.Context, req checkpoint.TakeRequest) (checkpoint.Result, error)
}

// NewService opens the worktree index of the state dir; a corrupt one is
// kept aside and rebuilt from the session records (Recover).
func NewService(stateDir string, sessions Sessions, ckpt Checkpointer, cgroups *cgroup.Host, log *zap.Logger) *Service {
	m, err := Open(Options{StateDir: stateDir, Log: log})
	if err != nil {
		log.Warn("worktree index unreadable: rebuilt from the session records", zap.Error(err))
	}
	return &Service{m: m, sessions: sessions, ckpt: ckpt, stateDir: stateDir, log: log, cgroups: cgroups}
}

// Start is the worktree of one start: made or reused before the session
// is created, and undone if the session does not start.
type Start struct {
	entry   Entry
	created bool
	owner   *state.Owner
	cred    *checkpoint.Credential
	project *state.Project
	// id is the session's id, chosen before the worktree that may be
	// named after it.
	id      string
	notices []string
	// cg is the session's cgroup, made for the setup (nil: none).
	cg *cgroup.Group
}

// dropCgroup removes the cgroup made for a setup whose session will not
// run.
func (w *Start) dropCgroup() {
	if w.cg == nil {
		return
	}
	_ = w.cg.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = w.cg.Wait(ctx)
	_ = w.cg.Remove()
	w.cg = nil
}

// Wire is the record's account of the worktree.
func (w *Start) Wire() *ipc.Worktree {
	if w == nil {
		return nil
	}
	return wireWorktree(w.entry)
}

func wireWorktree(e Entry) *ipc.Worktree {
	return &ipc.Worktree{Name: e.Name, Branch: e.Branch, Path: e.Path, Repo: e.Repo, Base: e.Base, Port: e.Port,
		From: e.From, RepoUncommitted: e.RepoUncommitted}
}

// Notices are what the start of the worktree has to say.
func (w *Start) Notices() []string {
	if w == nil {
		return nil
	}
	return w.notices
}

// SessionID is the id chosen for the session of the start, "" for none.
func (w *Start) SessionID() string {
	if w == nil {
		return ""
	}
	return w.id
}

// Project is the project the session of the start runs in: the worktree.
func (w *Start) Project() *state.Project { return w.project }

// Begin readies the worktree a start asks for (--worktree, or the spec's
// worktree key), or the one DIR already is; nil when the session runs in
// DIR itself.
func (x *Service) Begin(ctx context.Context, c ipc.Caller, p *state.Project, owner *state.Owner, sp config.Spec, req ipc.StartRequest) (*Start, error) {
	if e, ok := x.m.ByPath(p.Dir()); ok && (!req.Worktree || req.WorktreeName == "" || req.WorktreeName == e.Name) {
		// DIR is a worktree of sessiond's: the session runs there again.
		if e.UID != c.UID && !c.Root() {
			return nil, ipc.Forbidden("worktree %s belongs to uid %d, not to you (uid %d)", e.Name, e.UID, c.UID)
		}
		return &Start{entry: e, owner: owner, project: p, id: x.sessions.NewID()}, nil
	}
	opt := sp.Worktree
	if req.Worktree {
		opt = config.WorktreeOption{Enabled: true, Name: req.WorktreeName}
	}
	if !opt.Enabled {
		return nil, nil
	}
	w := &Start{owner: owner, id: x.sessions.NewID()}
	name := opt.Name
	if name == "" {
		name = w.id
	}
	w.cred = owner
	home := ""
	if w.cred != nil {
		home = w.cred.Home
	} else if h, err := os.UserHomeDir(); err == nil {
		home = h
	}
	root, err := Dir(sp.WorktreeDir, x.stateDir, home, owner != nil)
	if err != nil {
		return nil, ipc.BadRequest("%w", err)
	}
	if rel, err := filepath.Rel(p.Dir(), root); err == nil && sp.WorktreeDir == "" && filepath.IsLocal(rel) && home != "" {
		// A state dir inside the project (sessiond exec's default): the
		// worktrees go where the user's own daemon keeps them.
		root = filepath.Join(home, ".local", "state", "sessiond", "worktrees")
	}
	if len(sp.WorktreeSetup) > 0 && x.cgroups != nil {
		// The setup is the session's first work: it runs in the session's
		// cgroup, under its limits.
		if w.cg, _, err = x.cgroups.New(w.id, sp.Limits); err != nil {
			return nil, ipc.BadRequest("%w", err)
		}
	}
	prep, err := x.m.Prepare(ctx, PrepareRequest{
		Dir: p.Dir(), Name: name, From: req.From, Root: root, UID: c.UID, Owner: owner, Credential: w.cred,
		Setup: sp.WorktreeSetup, Env: baseSetupEnv(sp, req.Environ, w.cred), Ports: sp.PortRange, Cgroup: w.cg,
	})
	if err != nil {
		w.dropCgroup()
		return nil, apiError(err)
	}
	w.entry, w.created, w.notices = prep.Entry, prep.Created, prep.Notices
	if prep.Created || prep.Remade {
		x.log.Info("worktree ready", zap.String("worktree", prep.Entry.Name), zap.String("repo", prep.Entry.Repo),
			zap.String("path", prep.Entry.Path), zap.Int("copied", prep.Copied), zap.Int("setup", prep.SetupRan))
	}
	wp, _, err := access.OpenProject(prep.Entry.Path, c.UID)
	if err != nil {
		x.Undo(w)
		return nil, err
	}
	w.project = wp
	return w, nil
}

// baseSetupEnv is the environment of worktree_setup commands: the session's
// base, with the user's HOME when a root daemon runs them for the user.
func baseSetupEnv(sp config.Spec, caller []string, cred *checkpoint.Credential) []string {
	env := spec.BaseEnv(sp, caller)
	if cred != nil && cred.Home != "" {
		env = append(env, cred.Env()...)
	}
	return env
}

// Undo removes a worktree made for a start that did not happen, and lets
// go of a port it held; a reused one stays as it was.
func (x *Service) Undo(w *Start) {
	if w == nil {
		return
	}
	w.dropCgroup()
	k := w.entry.Key()
	if !w.created {
		_ = x.m.Release(k, "")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := x.m.Remove(ctx, RemoveRequest{Key: k, Owner: w.owner, Credential: w.cred, Force: true}); err != nil {
		x.log.Warn("remove the worktree of a start that failed", zap.String("worktree", k.Name), zap.Error(err))
	}
}

// Hold gives a launching session its worktree's port; the worktree must
// still be there.
func (x *Service) Hold(wt *ipc.Worktree, id string, r config.PortRange) (*ipc.Worktree, error) {
	k := Key{Repo: wt.Repo, Name: wt.Name}
	e, ok := x.m.Get(k)
	if !ok {
		return nil, ipc.Conflict("worktree %s of %s was removed: start a new one (sessionctl start --worktree=%s %s)", wt.Name, wt.Repo, wt.Name, wt.Repo)
	}
	if _, err := os.Lstat(e.Path); err != nil {
		return nil, ipc.Conflict("worktree %s: its directory %s is gone (%v): make it again with sessionctl start --worktree=%s %s, or remove it with sessionctl worktree rm %s",
			e.Name, e.Path, errors.Unwrap(err), e.Name, e.Repo, e.Name)
	}
	port, err := x.m.Hold(k, id, r)
	if err != nil {
		return nil, apiError(err)
	}
	out := *wt
	out.Port = port
	return &out, nil
}

// Unhold lets go of the port Hold took for session id, whose start went
// no further.
func (x *Service) Unhold(wt *ipc.Worktree, id string) {
	if err := x.m.Release(Key{Repo: wt.Repo, Name: wt.Name}, id); err != nil {
		x.log.Warn("release a worktree's port", zap.String("session", id), zap.Error(err))
	}
}

// Release lets go of the port an ended session's worktree held.
func (x *Service) Release(rec ipc.Session) {
	wt := rec.Worktree
	if wt == nil {
		return
	}
	if err := x.m.Release(Key{Repo: wt.Repo, Name: wt.Name}, rec.ID); err != nil {
		x.log.Warn("release a worktree's port", zap.String("session", rec.ID), zap.Error(err))
	}
}

// Recover settles the worktrees after the sessions are recovered: entries
// a lost index forgot come back from the session records (those whose
// directory is still there), half-made worktrees are rolled back, ports of
// sessions that are not live are released.
func (x *Service) Recover() {
	for _, rec := range x.sessions.Records() {
		if x.m.Loaded() {
			break
		}
		wt := rec.Worktree
		if wt == nil {
			continue
		}
		e := Entry{Name: wt.Name, Branch: wt.Branch, Path: wt.Path, Repo: wt.Repo, Base: wt.Base, From: wt.From,
			UID: rec.UID, Session: rec.ID, RepoUncommitted: wt.RepoUncommitted, CreatedAt: rec.StartedAt}
		if ipc.Live(rec.State) {
			e.Port, e.Holder = wt.Port, rec.ID
		}
		if _, err := os.Lstat(wt.Path); err != nil {
			continue
		}
		if err := x.m.Adopt(e); err != nil {
			x.log.Warn("rebuild a worktree's entry", zap.String("worktree", wt.Name), zap.Error(err))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x.m.Recover(ctx, x.sessions.IsLive, accessOf)
}

// apiError turns a worktree error into the API error a client sees.
func apiError(err error) error {
	var ae *ipc.Error
	switch {
	case errors.As(err, &ae):
		return err
	case errors.Is(err, ErrBranchExists), errors.Is(err, ErrPathExists), errors.Is(err, ErrBusy),
		errors.Is(err, ErrNoPort), errors.Is(err, ErrMissing), errors.Is(err, ErrUncommitted):
		return ipc.Conflict("%w", err)
	case errors.Is(err, ErrUnknown):
		return ipc.NotFound("%w", err)
	}
	return ipc.BadRequest("%w", err)
}

// accessOf is the identity worktree uid's git and files run with.
func accessOf(uid int) (*state.Owner, *checkpoint.Credential, error) {
	owner, err := access.Owner(uid)
	if err != nil {
		return nil, nil, ipc.Forbidden("%w", err)
	}
	return owner, owner, nil
}

// visibleWorktrees are the entries c may see, of the repository repo if
// it is not "" (a repository's directory, one inside it, or one of its
// worktrees).
func (x *Service) visible(c ipc.Caller, repo string) []Entry {
	if e, ok := x.m.ByPath(repo); ok {
		repo = e.Repo
	}
	var out []Entry
	for _, e := range x.m.List() {
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
func (x *Service) ListWorktrees(ctx context.Context, c ipc.Caller, repo string) ([]ipc.WorktreeInfo, error) {
	if repo != "" && !filepath.IsAbs(repo) {
		return nil, ipc.BadRequest("repository %q is not an absolute path", repo)
	}
	if repo != "" && len(x.visible(c, repo)) == 0 {
		// A filter naming no directory is a mistake, not an empty list;
		// looked at with the caller's rights.
		owner, _, err := accessOf(c.UID)
		if err != nil {
			return nil, err
		}
		if fi, err := state.FilesOf(owner).Stat(repo); err != nil || !fi.IsDir() {
			return nil, ipc.BadRequest("repository %s: no such directory (or not one this user may see)", repo)
		}
	}
	byPath := map[string][]ipc.WorktreeSession{}
	live := map[string]bool{}
	all := x.sessions.Records()
	for i := len(all) - 1; i >= 0; i-- {
		rec := all[i]
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
	for _, e := range x.visible(c, repo) {
		info := ipc.WorktreeInfo{Worktree: *wireWorktree(e), CreatedAt: e.CreatedAt, Sessions: byPath[e.Path], UncommittedFiles: []string{}}
		if info.Port == 0 {
			info.Port = e.LastPort
		}
		if info.Sessions == nil {
			info.Sessions = []ipc.WorktreeSession{}
		}
		_, cred, err := accessOf(e.UID)
		var st Status
		if err == nil {
			st, err = StatusOf(ctx, e, cred)
		}
		if err != nil {
			info.Error = err.Error()
		}
		info.CommitsAhead, info.Review = st.Ahead, ReviewCommand(e.Repo, e.Base, e.Branch)
		if st.Uncommitted != nil {
			info.UncommittedFiles = st.Uncommitted
		}
		switch {
		case e.State != StateReady:
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
func (x *Service) RemoveWorktree(ctx context.Context, c ipc.Caller, name string, req ipc.WorktreeRemoveRequest) (*ipc.WorktreeRemoved, error) {
	if err := config.CheckWorktreeName(name); err != nil {
		return nil, ipc.BadRequest("%w", err)
	}
	if req.Repo != "" && !filepath.IsAbs(req.Repo) {
		return nil, ipc.BadRequest("repository %q is not an absolute path", req.Repo)
	}
	var found []Entry
	for _, e := range x.visible(c, req.Repo) {
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
	if live := x.sessions.LiveIn(e.Path); live != "" {
		return nil, ipc.Conflict("worktree %s has a live session (%s): stop it first (sessionctl stop %s)", name, live, live)
	}
	owner, cred, err := accessOf(e.UID)
	if err != nil {
		return nil, err
	}
	// Checked again once no start can take the worktree: one may have
	// begun since the check above.
	busy := func() error {
		if live := x.sessions.LiveIn(e.Path); live != "" {
			return ipc.Conflict("worktree %s has a live session (%s): stop it first (sessionctl stop %s)", name, live, live)
		}
		return nil
	}
	rr := RemoveRequest{Key: e.Key(), Owner: owner, Credential: cred, Check: busy}
	out := &ipc.WorktreeRemoved{Worktree: *wireWorktree(e)}
	res, err := x.m.Remove(ctx, rr)
	var ue *UncommittedError
	if errors.As(err, &ue) {
		if !req.Force {
			return nil, ipc.Conflict("worktree %s has %d uncommitted files (%s): commit them in %s, or remove it with --force (a checkpoint keeps them first)",
				name, len(ue.Files), listSome(ue.Files, 5), e.Path)
		}
		cp, err := x.checkpoint(ctx, e, cred)
		if err != nil {
			return nil, ipc.Conflict("worktree %s: checkpoint its uncommitted work before removing it: %w; nothing was removed", name, err)
		}
		out.Checkpoint, out.Ref = cp.ID, cp.Ref
		rr.Force = true
		res, err = x.m.Remove(ctx, rr)
		if err != nil {
			return nil, apiError(err)
		}
	} else if err != nil {
		return nil, apiError(err)
	}
	out.Pruned, out.BranchDeleted, out.CommitsAhead, out.Discarded = res.Pruned, res.BranchDeleted, res.Ahead, res.Discarded
	return out, nil
}

// checkpoint checkpoints a worktree's work tree on the ref of its last
// session (or, for one no session ran in, a ref named after it).
func (x *Service) checkpoint(ctx context.Context, e Entry, cred *checkpoint.Credential) (checkpoint.Result, error) {
	id := e.Session
	if id == "" {
		id = "worktree-" + e.Name
	}
	ctx, cancel := context.WithTimeout(ctx, checkpoint.DefaultTimeout)
	defer cancel()
	return x.ckpt.Take(ctx, checkpoint.TakeRequest{Dir: e.Path, SessionID: id, Credential: cred,
		Message: "worktree " + e.Name + " removed with --force: its uncommitted work"})
}

// listSome names the first n items and how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
