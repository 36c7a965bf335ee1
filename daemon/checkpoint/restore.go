package checkpoint

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// RestoreSession is the session id under which Restore checkpoints the work
// tree before changing it.
const RestoreSession = "restore"

// RestoreRequest asks to make a project's work tree match a checkpoint.
type RestoreRequest struct {
	Dir string
	// Checkpoint is the id, or a unique prefix of at least 4 hex digits, of
	// the checkpoint: its current id, a former one (before a prune rewrote
	// it), or one folded away by retention while git still has its commit.
	Checkpoint string
	// SessionID is the session under which the work tree is checkpointed
	// before it changes; "" means RestoreSession.
	SessionID string
	// MaxFileSize and Ignore are as in TakeRequest, for that checkpoint.
	MaxFileSize int64
	Ignore      []string
	// ShadowRoot and Credential are as in TakeRequest; with a Credential,
	// every file is removed and written with that user's rights.
	ShadowRoot string
	Credential *Credential
}

// Restore makes the work tree of the project match a checkpoint. It first
// checkpoints the current work tree (session req.SessionID, default
// RestoreSession: saved), so a restore can itself be undone. Files the
// checkpoint lacks are removed unless ignored or left out; ignored files
// are not touched. HEAD, the branch, the index and the stash stay as they
// are: afterwards git status shows the restored state as uncommitted
// changes. restored is the checkpoint whose tree the work tree now has
// (for the id of a folded checkpoint, that checkpoint's own commit).
func (c *Checkpointer) Restore(ctx context.Context, req RestoreRequest) (saved Result, restored Checkpoint, err error) {
	sessionID := req.SessionID
	if sessionID == "" {
		sessionID = RestoreSession
	}
	if err := checkSessionID(sessionID); err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: %w", req.Checkpoint, req.Dir, err)
	}
	r, exists, unlock, err := c.open(ctx, where{dir: req.Dir, shadowRoot: req.ShadowRoot, cred: req.Credential}, false)
	if err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: %w", req.Checkpoint, req.Dir, err)
	}
	defer unlock()
	if !exists {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: %w", req.Checkpoint, req.Dir, ErrUnknownCheckpoint)
	}
	cps, err := r.list(ctx)
	if err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: %w", req.Checkpoint, r.top, err)
	}
	found, err := find(cps, req.Checkpoint)
	if err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore in %s: %w", r.top, err)
	}
	target := found.Checkpoint
	if found.Match == MatchFolded {
		if target, err = r.foldedCheckpoint(ctx, found); err != nil {
			return Result{}, Checkpoint{}, fmt.Errorf("restore in %s: %w", r.top, err)
		}
	}
	take := TakeRequest{SessionID: sessionID, Message: "before restoring " + target.ID, MaxFileSize: req.MaxFileSize, Ignore: req.Ignore}
	saved, prev, err := c.takeRef(ctx, r, &take)
	if err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: save the work tree first: %w", target.ID, r.top, err)
	}
	if err := r.restoreTree(ctx, saved.Tree, target.tree); err != nil {
		return saved, Checkpoint{}, fmt.Errorf("restore %s in %s (the work tree before it is checkpoint %s): %w", target.ID, r.top, saved.ID, err)
	}
	if !saved.Skipped {
		c.retain(ctx, r, sessionID, &saved, prev) // after: it may fold the target away
	}
	return saved, target, nil
}

// foldedCheckpoint reads the commit of a checkpoint that retention folded
// away, while git still has it.
func (r *repo) foldedCheckpoint(ctx context.Context, f Found) (Checkpoint, error) {
	g := r.gitRun(nil, nil)
	g.okCodes = []int{128}
	res, err := git(ctx, g, "log", "-1", "--no-walk", "--date=raw", "--format="+walkFormat, f.ID, "--")
	if err == nil && res.code == 0 {
		if es, perr := parseWalk(r, res.stdout); perr == nil && len(es) == 1 {
			if cp, ok := es[0].checkpoint(); ok {
				return cp, nil
			}
		}
	}
	return Checkpoint{}, fmt.Errorf("checkpoint %.12s was folded into %.12s by retention and git no longer has it (restore %.12s, the state just after it): %w",
		f.ID, f.Checkpoint.ID, f.Checkpoint.ID, ErrFolded)
}

// restoreTree changes the work tree from tree cur (what it holds now, as
// just checkpointed) to tree target: it removes what target lacks and writes
// what differs through a private index, so only changed files are touched
// and their neighbours keep their stat data (and git's stat cache stays
// valid for them).
func (r *repo) restoreTree(ctx context.Context, cur, target string) error {
	args := []string{"diff-tree", "-r", "-z", "--no-renames", cur, target}
	// A project below the repository's top is restored alone: the rest of
	// the repository (another project, a session's) stays as it is.
	sub, err := filepath.Rel(r.top, r.project)
	if err != nil || !filepath.IsLocal(sub) && sub != "." {
		return fmt.Errorf("project %s is not in the work tree %s", r.project, r.top)
	}
	sub = filepath.ToSlash(sub)
	if sub != "." {
		args = append(args, "--", ":(literal)"+sub)
	}
	res, err := r.run(ctx, nil, nil, args...)
	if err != nil {
		return err
	}
	var remove, write, added []string
	f := splitNUL(res.stdout)
	for i := 0; i+1 < len(f); i += 2 {
		// ":100644 100644 <old> <new> M" then the path.
		meta := strings.Fields(f[i])
		path := f[i+1]
		if len(meta) != 5 || !safePath(path) {
			return fmt.Errorf("diff-tree %s %s: unexpected entry %q %q", cur, target, f[i], path)
		}
		oldMode, newMode, status := strings.TrimPrefix(meta[0], ":"), meta[1], meta[4]
		if oldMode == "160000" || newMode == "160000" {
			continue // submodules are repositories of their own: leave them
		}
		switch status {
		case "D":
			remove = append(remove, path)
		case "T":
			remove = append(remove, path)
			write = append(write, path)
		case "A":
			added = append(added, path)
			write = append(write, path)
		default:
			write = append(write, path)
		}
	}
	// As the user, all of it: see removeBeneath.
	err = asUser(r.cred, func() error {
		lost, err := unsaved(r.top, added, remove)
		if err != nil {
			return err
		}
		if len(lost) > 0 {
			return &UnsavedError{Paths: lost}
		}
		return removeEntries(r.top, remove, sub)
	})
	if err != nil {
		return err
	}
	if len(write) == 0 {
		return nil
	}
	tmp, err := r.mkdirTemp("restore")
	if err != nil {
		return fmt.Errorf("make temporary index: %w", err)
	}
	defer removeAll(r.cred, tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := r.run(ctx, env, nil, "read-tree", target); err != nil {
		return err
	}
	var stdin strings.Builder
	for _, p := range write {
		stdin.WriteString(p + "\x00")
	}
	_, err = r.run(ctx, env, []byte(stdin.String()), "checkout-index", "-f", "-z", "--stdin")
	return err
}

// maxUnsaved bounds the paths an UnsavedError names.
const maxUnsaved = 10

// unsaved is what a restore would write over or remove that the
// checkpoint of the work tree just taken does not hold: an untracked file
// left out (over checkpoint_max_file), an ignored file, or one in a
// directory that becomes a file. added are the paths the target has and
// that checkpoint lacks; remove the paths the restore removes. Only the
// first maxUnsaved are named, and a last "..." says there are more.
func unsaved(top string, added, remove []string) ([]string, error) {
	removing := make(map[string]bool, len(remove))
	for _, p := range remove {
		removing[p] = true
	}
	var lost []string
	seen := map[string]bool{}
	note := func(p string) bool {
		if seen[p] {
			return true
		}
		seen[p] = true
		if len(lost) == maxUnsaved {
			lost = append(lost, "...")
			return false
		}
		lost = append(lost, p)
		return true
	}
	for _, p := range added {
		// A file where the target has a directory on the way.
		for i := strings.IndexByte(p, '/'); i >= 0; i = next(p, i) {
			d := p[:i]
			kind, err := lstatBeneath(top, d)
			if err != nil {
				return nil, err
			}
			if kind == entryNone {
				break
			}
			if kind == entryOther && !removing[d] && !note(d) {
				return lost, nil
			}
		}
		kind, err := lstatBeneath(top, p)
		if err != nil {
			return nil, err
		}
		switch kind {
		case entryOther:
			if !note(p) {
				return lost, nil
			}
		case entryDir:
			more := true
			err := entriesBeneath(top, p, func(e string) bool {
				if !removing[e] {
					more = note(e)
				}
				return more
			})
			if err != nil {
				return nil, err
			}
			if !more {
				return lost, nil
			}
		}
	}
	return lost, nil
}

// next is the index of the slash after the one at i in p, or -1.
func next(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// removeEntries removes the files remove under top, then the directories they
// leave empty, deepest first; one that still holds something (an ignored
// file) stays, and so do the project's directory sub (relative to top, "."
// for top) and those that hold it.
func removeEntries(top string, remove []string, sub string) error {
	dirs := map[string]bool{}
	for _, p := range remove {
		if err := removeBeneath(top, p, false); err != nil {
			return err
		}
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	order := make([]string, 0, len(dirs))
	for d := range dirs {
		order = append(order, d)
	}
	slices.SortFunc(order, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range order {
		if d == sub || strings.HasPrefix(sub, d+"/") {
			continue
		}
		_ = removeBeneath(top, d, true)
	}
	return nil
}

// tempBase is where temporary indexes go: the system temp dir, or inside a
// shadow repository (so its index can be renamed into place).
func tempBase(r *repo) string {
	if r.shadow {
		return r.gitDir
	}
	return ""
}

// safePath reports whether a path from a tree stays inside the work tree and
// out of .git.
func safePath(p string) bool {
	if p == "" || !filepath.IsLocal(filepath.FromSlash(p)) {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}
