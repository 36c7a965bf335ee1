package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// RestoreSession is the session id under which Restore checkpoints the work
// tree before changing it.
const RestoreSession = "restore"

// Restore makes the work tree of the project in dir match checkpoint (an id
// or a unique prefix of one, at least 4 hex digits). It first checkpoints the
// current work tree under session RestoreSession (saved), so a restore can
// itself be undone. Files the checkpoint lacks are removed unless ignored or
// left out; ignored files are not touched. HEAD, the branch, the index and
// the stash stay as they are: afterwards git status shows the restored
// state as uncommitted changes.
func (c *Checkpointer) Restore(ctx context.Context, dir, checkpoint string) (saved Result, restored Checkpoint, err error) {
	return c.RestoreAs(ctx, dir, checkpoint, RestoreSession)
}

// RestoreAs is Restore with the checkpoint of the current work tree made for
// session sessionID.
func (c *Checkpointer) RestoreAs(ctx context.Context, dir, checkpoint, sessionID string) (saved Result, restored Checkpoint, err error) {
	if err := checkSessionID(sessionID); err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: %w", checkpoint, dir, err)
	}
	r, exists, unlock, err := c.open(ctx, dir, false)
	if err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: %w", checkpoint, dir, err)
	}
	defer unlock()
	if !exists {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: %w", checkpoint, dir, ErrUnknownCheckpoint)
	}
	cps, err := r.list(ctx)
	if err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: %w", checkpoint, r.top, err)
	}
	target, err := find(cps, checkpoint)
	if err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore in %s: %w", r.top, err)
	}
	saved, _, err = c.takeRef(ctx, r, sessionID, "before restoring "+target.ID)
	if err != nil {
		return Result{}, Checkpoint{}, fmt.Errorf("restore %s in %s: save the work tree first: %w", target.ID, r.top, err)
	}
	if err := r.restoreTree(ctx, saved.Tree, target.tree); err != nil {
		return saved, Checkpoint{}, fmt.Errorf("restore %s in %s (the work tree before it is checkpoint %s): %w", target.ID, r.top, saved.ID, err)
	}
	return saved, target, nil
}

// restoreTree changes the work tree from tree cur (what it holds now, as
// just checkpointed) to tree target: it removes what target lacks and writes
// what differs through a private index, so only changed files are touched
// and their neighbours keep their stat data (and git's stat cache stays
// valid for them).
func (r *repo) restoreTree(ctx context.Context, cur, target string) error {
	res, err := r.run(ctx, nil, nil, "diff-tree", "-r", "-z", "--no-renames", cur, target)
	if err != nil {
		return err
	}
	var remove, write []string
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
		default:
			write = append(write, path)
		}
	}
	dirs := map[string]bool{}
	for _, p := range remove {
		full := filepath.Join(r.top, filepath.FromSlash(p))
		if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", full, err)
		}
		for d := filepath.Dir(p); d != "." && d != "/"; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	// Directories left empty go too, deepest first; one that still holds
	// something (an ignored file) stays.
	order := make([]string, 0, len(dirs))
	for d := range dirs {
		order = append(order, d)
	}
	slices.SortFunc(order, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range order {
		_ = os.Remove(filepath.Join(r.top, filepath.FromSlash(d)))
	}
	if len(write) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp(tempBase(r), "sessiond-restore-*")
	if err != nil {
		return fmt.Errorf("make temporary index: %w", err)
	}
	defer os.RemoveAll(tmp)
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
