package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
)

// PrepareRequest asks for the worktree NAME of the repository that Dir is
// in: made on first use, reused after.
type PrepareRequest struct {
	// Dir is a directory of the repository (its main work tree, or any
	// worktree of it).
	Dir  string
	Name string
	// From is the ref a new worktree starts from; "" is the repository's
	// HEAD, which must be on a branch.
	From string
	// Root is where worktrees are made (Dir gives the default):
	// Root/<repository>-<id>/<Name>.
	Root string
	// UID is the user the worktree belongs to; Owner and Credential are
	// that user's identity for files and for git (nil: the daemon's own).
	UID        int
	Owner      *state.Owner
	Credential *checkpoint.Credential
	// Setup are the commands run in a new worktree, with the environment
	// Env (plus the worktree's own variables), Ports the range its port
	// comes from.
	Setup config.SetupCommands
	Env   []string
	Ports config.PortRange
	// Output, if not nil, receives the setup's output.
	Output io.Writer
	// Cgroup, if not nil, is the session's cgroup the setup runs in.
	Cgroup *cgroup.Group
}

// Prepared says what Prepare did.
type Prepared struct {
	Entry Entry
	// Created is a new worktree on a new branch; Remade a worktree whose
	// directory had been deleted, made again on its branch. Neither: the
	// worktree was there and is reused as it is.
	Created, Remade bool
	// Copied counts the .worktreeinclude files copied; SetupRan the setup
	// commands that ran.
	Copied, SetupRan int
	// Notices are what the start should tell: a dirty repository, a
	// --from that an existing worktree ignores.
	Notices []string
}

// Dir returns where a user's worktrees are made: worktreeDir if set
// ("~/" is the user's home); else for a daemon of the user's own
// stateDir/worktrees; else, for a root daemon serving another user,
// home/.local/state/sessiond/worktrees, where that user's own daemon keeps
// its state (git runs as the user and cannot enter root's state dir).
func Dir(worktreeDir, stateDir, home string, otherUser bool) (string, error) {
	switch {
	case strings.HasPrefix(worktreeDir, "~/"):
		if home == "" {
			return "", fmt.Errorf("worktree_dir %q: the user has no home directory", worktreeDir)
		}
		return filepath.Join(home, worktreeDir[2:]), nil
	case worktreeDir != "":
		return filepath.Clean(worktreeDir), nil
	case !otherUser:
		return filepath.Join(stateDir, "worktrees"), nil
	case home == "":
		return "", errors.New("the user has no home directory for their worktrees: set worktree_dir")
	}
	return filepath.Join(home, ".local", "state", "sessiond", "worktrees"), nil
}

// prepareTimeout bounds the git commands of one Prepare (not the setup).
const prepareTimeout = 2 * time.Minute

// Prepare returns the worktree req names, ready for a session: an
// existing one as it is (no setup runs again), one whose directory was
// deleted made again on its branch, or a new one — on a new branch
// sessiond/NAME from req.From or HEAD, in req.Root, its .worktreeinclude
// files copied and req.Setup run in it, holding a port of req.Ports for
// the session to take (Hold). A failure leaves nothing of what it made:
// no directory, no branch, no entry, no port.
func (m *Manager) Prepare(ctx context.Context, req PrepareRequest) (Prepared, error) {
	if err := config.CheckWorktreeName(req.Name); err != nil {
		return Prepared{}, err
	}
	gctx, cancel := context.WithTimeout(ctx, prepareTimeout)
	defer cancel()
	repo, err := mainWorkTree(gctx, req.Dir, req.Credential)
	if err != nil {
		return Prepared{}, err
	}
	k := Key{Repo: repo, Name: req.Name}
	m.mu.Lock()
	e, ok := m.entries[k]
	if ok {
		cur := *e
		m.mu.Unlock()
		return m.reuse(ctx, req, cur)
	}
	m.mu.Unlock()

	branch := BranchPrefix + req.Name
	if exists, err := branchExists(gctx, repo, req.Credential, branch); err != nil {
		return Prepared{}, err
	} else if exists {
		return Prepared{}, fmt.Errorf("%w: %s in %s belongs to no sessiond worktree; choose another name, or delete the branch (git branch -D %s)", ErrBranchExists, branch, repo, branch)
	}
	if req.Root == "" {
		return Prepared{}, errors.New("no directory to make worktrees in")
	}
	if rel, err := filepath.Rel(repo, req.Root); err == nil && (filepath.IsLocal(rel) || rel == ".") {
		return Prepared{}, fmt.Errorf("worktree_dir %s: %w %s; set worktree_dir to a directory outside it", req.Root, ErrInsideRepo, repo)
	}
	path := filepath.Join(req.Root, repoDirName(repo), req.Name)
	if _, err := os.Lstat(path); err == nil {
		return Prepared{}, fmt.Errorf("%s: %w and is no worktree sessiond made; choose another name, or remove it", path, ErrPathExists)
	}
	nw := Entry{Name: req.Name, Branch: branch, Path: path, Repo: repo, UID: req.UID, State: StateCreating, CreatedAt: time.Now().UTC()}
	var notices []string
	if req.From == "" {
		facts, err := checkpoint.Facts(gctx, checkpoint.FactsRequest{Dir: repo, Credential: req.Credential})
		switch {
		case err != nil:
			return Prepared{}, err
		case facts.Head == "":
			return Prepared{}, fmt.Errorf("%s: %w to start a worktree from; commit first", repo, ErrNoCommits)
		case facts.Branch == "":
			return Prepared{}, fmt.Errorf("%s: %w (at %s): give the commit or branch to start from with --from REF", repo, ErrDetached, short(facts.Head))
		}
		nw.Base, nw.From, nw.RepoUncommitted = facts.Head, facts.Branch, len(facts.Uncommitted)
		if n := len(facts.Uncommitted); n > 0 {
			notices = append(notices, fmt.Sprintf("%s has %s; worktree %s starts from HEAD (%s, %s) without them",
				repo, plural(n, "uncommitted file"), req.Name, facts.Branch, short(facts.Head)))
		}
	} else {
		if nw.Base, err = resolveCommit(gctx, repo, req.Credential, req.From); err != nil {
			return Prepared{}, err
		}
		nw.From = req.From
	}

	m.mu.Lock()
	if _, ok := m.entries[k]; ok {
		m.mu.Unlock()
		return Prepared{}, fmt.Errorf("worktree %s: %w by another start", k, ErrBusy)
	}
	for _, o := range m.entries {
		if o.Path == path {
			m.mu.Unlock()
			return Prepared{}, fmt.Errorf("%s: %w (worktree %s)", path, ErrPathExists, o.Name)
		}
	}
	// The entry is on disk before anything is made, so that a crash from
	// here on is rolled back at the next start (Recover).
	stored := nw
	m.entries[k] = &stored
	if err := m.saveLocked(); err != nil {
		delete(m.entries, k)
		m.mu.Unlock()
		return Prepared{}, err
	}
	m.mu.Unlock()

	res := Prepared{Created: true, Notices: notices}
	fail := func(err error) (Prepared, error) {
		if rerr := m.rollback(context.WithoutCancel(ctx), nw, req.Owner, req.Credential, true); rerr != nil {
			m.log.Warn("roll back a worktree that could not be made: " + rerr.Error())
			return Prepared{}, errors.Join(err, rerr)
		}
		return Prepared{}, err
	}
	parent := filepath.Dir(path)
	if err := state.RunAs(req.Owner, func() error { return os.MkdirAll(parent, 0o700) }); err != nil {
		return fail(fmt.Errorf("make the worktree directory %s: %w", parent, err))
	}
	if _, err := runGit(gctx, checkpoint.GitRequest{Dir: repo, Credential: req.Credential, NoFilters: true,
		Args: []string{"worktree", "add", "-q", "--no-track", "-b", branch, path, nw.Base}}); err != nil {
		return fail(fmt.Errorf("make worktree %s: %w", req.Name, err))
	}
	if err := m.finish(ctx, req, &nw, &res); err != nil {
		return fail(err)
	}
	res.Entry = nw
	return res, nil
}

// finish readies a worktree that git has just checked out: its port, the
// included files, the setup; then the entry is ready.
func (m *Manager) finish(ctx context.Context, req PrepareRequest, e *Entry, res *Prepared) error {
	port, err := m.Hold(e.Key(), "", req.Ports)
	if err != nil {
		return err
	}
	e.Port = port
	files, err := includedFiles(ctx, e.Repo, req.Credential)
	if err != nil {
		return err
	}
	if res.Copied, err = copyIncluded(req.Owner, e.Repo, e.Path, files); err != nil {
		return err
	}
	if err := runSetup(ctx, e.Path, req.Setup, setupEnv(req.Env, *e), req.Owner, req.Output, req.Cgroup); err != nil {
		return err
	}
	res.SetupRan = len(req.Setup)
	return m.update(e.Key(), func(x *Entry) {
		x.State, x.Remake = StateReady, false
		*e = *x
	})
}

// reuse readies an existing worktree: as it is, or, its directory
// deleted by hand, made again on its branch (from its base if the branch
// is gone too).
func (m *Manager) reuse(ctx context.Context, req PrepareRequest, e Entry) (Prepared, error) {
	switch {
	case e.State != StateReady:
		return Prepared{}, fmt.Errorf("worktree %s: %w (%s)", e.Key(), ErrBusy, e.State)
	case e.UID != req.UID:
		return Prepared{}, fmt.Errorf("worktree %s belongs to uid %d, not to you (uid %d): choose another name", e.Key(), e.UID, req.UID)
	}
	res := Prepared{Entry: e}
	if req.From != "" {
		res.Notices = append(res.Notices, fmt.Sprintf("--from %s is ignored: worktree %s exists, on %s from %s", req.From, e.Name, e.Branch, short(e.Base)))
	}
	if _, err := os.Lstat(e.Path); err == nil {
		return res, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Prepared{}, fmt.Errorf("worktree %s: %w", e.Name, err)
	}
	// Deleted by hand: what git worktree prune does, then the directory
	// again on the branch, which still holds the worktree's commits.
	if err := m.update(e.Key(), func(x *Entry) { x.State, x.Remake = StateCreating, true }); err != nil {
		return Prepared{}, err
	}
	e.State, e.Remake = StateCreating, true
	gctx, cancel := context.WithTimeout(ctx, prepareTimeout)
	defer cancel()
	fail := func(err error) (Prepared, error) {
		if rerr := m.rollback(context.WithoutCancel(ctx), e, req.Owner, req.Credential, false); rerr != nil {
			return Prepared{}, errors.Join(err, rerr)
		}
		return Prepared{}, err
	}
	if _, err := git(gctx, e.Repo, req.Credential, "worktree", "prune"); err != nil {
		return fail(err)
	}
	args := []string{"worktree", "add", "-q", e.Path, e.Branch}
	if exists, err := branchExists(gctx, e.Repo, req.Credential, e.Branch); err != nil {
		return fail(err)
	} else if !exists {
		args = []string{"worktree", "add", "-q", "--no-track", "-b", e.Branch, e.Path, e.Base}
	}
	if err := state.RunAs(req.Owner, func() error { return os.MkdirAll(filepath.Dir(e.Path), 0o700) }); err != nil {
		return fail(fmt.Errorf("make the worktree directory %s: %w", filepath.Dir(e.Path), err))
	}
	if _, err := runGit(gctx, checkpoint.GitRequest{Dir: e.Repo, Credential: req.Credential, NoFilters: true, Args: args}); err != nil {
		return fail(fmt.Errorf("make worktree %s again: %w", e.Name, err))
	}
	res.Remade = true
	res.Notices = append(res.Notices, fmt.Sprintf("worktree %s: its directory %s had been deleted; made again on %s", e.Name, e.Path, e.Branch))
	if err := m.finish(ctx, req, &e, &res); err != nil {
		return fail(err)
	}
	res.Entry = e
	return res, nil
}

// rollback undoes a worktree being made: its directory, git's record of
// it, its port; a new one (fresh) also loses its branch and its entry,
// one being made again goes back to ready without a directory.
func (m *Manager) rollback(ctx context.Context, e Entry, owner *state.Owner, cred *checkpoint.Credential, fresh bool) error {
	ctx, cancel := context.WithTimeout(ctx, prepareTimeout)
	defer cancel()
	var errs []error
	if err := removeDir(ctx, e, owner, cred); err != nil {
		errs = append(errs, err)
	}
	if fresh {
		if exists, err := branchExists(ctx, e.Repo, cred, e.Branch); err == nil && exists {
			if n, err := CommitsAhead(ctx, e.Repo, cred, e.Base, e.Branch); err == nil && n == 0 {
				if _, err := git(ctx, e.Repo, cred, "branch", "-D", e.Branch); err != nil {
					errs = append(errs, err)
				}
			}
		}
		removeEmptyParent(owner, e.Path)
		if err := m.forget(e.Key()); err != nil {
			errs = append(errs, err)
		}
	} else if err := m.update(e.Key(), func(x *Entry) {
		x.State, x.Remake, x.LastPort, x.Port, x.Holder = StateReady, false, max(x.LastPort, x.Port), 0, ""
	}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeDir removes a worktree's directory and git's record of it: git
// worktree remove, else (a directory git no longer knows as a worktree)
// the directory with the user's rights, then git worktree prune.
func removeDir(ctx context.Context, e Entry, owner *state.Owner, cred *checkpoint.Credential) error {
	if _, err := os.Lstat(e.Path); errors.Is(err, fs.ErrNotExist) {
		_, err := git(ctx, e.Repo, cred, "worktree", "prune")
		return err
	}
	if _, err := git(ctx, e.Repo, cred, "worktree", "remove", "--force", "--force", e.Path); err == nil {
		return nil
	}
	if err := state.RunAs(owner, func() error { return os.RemoveAll(e.Path) }); err != nil {
		return fmt.Errorf("remove worktree directory %s: %w", e.Path, err)
	}
	_, err := git(ctx, e.Repo, cred, "worktree", "prune")
	return err
}

// removeEmptyParent removes the repository's directory of worktrees once
// its last worktree is gone.
func removeEmptyParent(owner *state.Owner, path string) {
	_ = state.RunAs(owner, func() error { return os.Remove(filepath.Dir(path)) })
}

// repoDirName is the directory of a repository's worktrees under the
// root: its base name and the first digits of its id, so that two
// repositories of one name stay apart.
func repoDirName(repo string) string {
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, filepath.Base(repo))
	base = strings.TrimLeft(base, ".")
	if base == "" {
		base = "repo"
	}
	return base + "-" + state.ProjectID(repo)[:8]
}

// procCredential is the credential processes of owner run with (nil: the
// daemon's own).
func procCredential(o *state.Owner) *syscall.Credential {
	if o == nil {
		return nil
	}
	return o.Credential()
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
