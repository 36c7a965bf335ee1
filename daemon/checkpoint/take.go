package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Result describes a checkpoint that Take made (or skipped).
type Result struct {
	// ID is the checkpoint's commit; when Skipped, the previous checkpoint.
	ID string `json:"id"`
	// Ref is the ref the checkpoint is on (the branch in mode commit).
	Ref string `json:"ref"`
	// Tree is the tree of the work tree as checkpointed.
	Tree string `json:"tree"`
	// Time is when the checkpoint was made (second precision, as in git).
	Time time.Time `json:"time"`
	// FilesChanged is the number of paths that differ from the parent.
	FilesChanged int `json:"files_changed"`
	// Files are those paths, relative to the top of the work tree.
	Files []string `json:"files,omitempty"`
	// Skipped is set when the tree equals the previous checkpoint's: no
	// commit was made.
	Skipped bool `json:"skipped"`
	// LeftOut names untracked content that was left out: directories (with
	// a trailing slash) such as node_modules, and files over MaxFileSize.
	LeftOut []string `json:"left_out,omitempty"`
}

// checkpointIdentity is the author and committer of ref-mode checkpoints:
// they are sessiond's commits, and a user without a configured identity must
// still get them.
var checkpointIdentity = []string{
	"GIT_AUTHOR_NAME=sessiond", "GIT_AUTHOR_EMAIL=sessiond@localhost",
	"GIT_COMMITTER_NAME=sessiond", "GIT_COMMITTER_EMAIL=sessiond@localhost",
}

// Take checkpoints the work tree of the project in dir for session
// sessionID. In ModeRef (the default, also for "") it commits to
// refs/sessiond/checkpoints/<sessionID> and changes nothing of the user's; in
// ModeCommit it commits on the current branch. A non-git project always
// uses ModeRef in its shadow repository. message, if any, becomes the body
// of the commit message.
func (c *Checkpointer) Take(ctx context.Context, dir, sessionID string, mode Mode, message string) (Result, error) {
	if err := checkSessionID(sessionID); err != nil {
		return Result{}, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if mode != "" && mode != ModeRef && mode != ModeCommit {
		return Result{}, fmt.Errorf("checkpoint %s: mode %q: %w", dir, mode, ErrBadMode)
	}
	r, _, unlock, err := c.open(ctx, dir, true)
	if err != nil {
		return Result{}, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	defer unlock()
	if mode == ModeCommit && !r.shadow {
		res, err := c.takeCommit(ctx, r, sessionID, message)
		if err != nil {
			return Result{}, fmt.Errorf("checkpoint %s (mode commit): %w", r.top, err)
		}
		return res, nil
	}
	res, depth, err := c.takeRef(ctx, r, sessionID, message)
	if err != nil {
		return Result{}, fmt.Errorf("checkpoint %s: %w", r.top, err)
	}
	// Fold old checkpoints away in batches, so ids change rarely.
	if !res.Skipped && depth > c.opt.Keep+max(c.opt.Keep/4, 1) {
		n, err := c.pruneRefs(ctx, r, c.opt.Keep, res.Ref)
		if err != nil {
			c.log.Warn("prune checkpoints", zap.String("session", sessionID), zap.String("dir", r.top), zap.Error(err))
		} else if n > 0 {
			res.ID, _ = r.out(ctx, nil, "rev-parse", "--verify", res.Ref)
		}
	}
	return res, nil
}

// prevCheckpoint is the tip of a session's checkpoint ref.
type prevCheckpoint struct {
	id, tree string
	depth    int
}

// tip reads the tip of ref, if it exists.
func (r *repo) tip(ctx context.Context, ref string) (prevCheckpoint, error) {
	res, err := r.run(ctx, nil, nil, "for-each-ref", "--format=%(objectname)%00%(tree)%00%(contents)", ref)
	if err != nil {
		return prevCheckpoint{}, err
	}
	if len(res.stdout) == 0 {
		return prevCheckpoint{}, nil
	}
	f := strings.SplitN(string(res.stdout), "\x00", 3)
	if len(f) != 3 {
		return prevCheckpoint{}, fmt.Errorf("read %s: unexpected output %q", ref, res.stdout)
	}
	return prevCheckpoint{id: f[0], tree: f[1], depth: parseMessage(f[2]).getInt(trailerDepth)}, nil
}

// takeRef makes a ref-mode checkpoint. The caller holds the repository lock.
// depth is the number of checkpoints on the ref afterwards.
func (c *Checkpointer) takeRef(ctx context.Context, r *repo, sessionID, text string) (res Result, depth int, err error) {
	ref := RefPrefix + sessionID
	res.Ref = ref
	prev, err := r.tip(ctx, ref)
	if err != nil {
		return res, 0, err
	}
	parent := prev.id
	if parent == "" {
		if parent, err = r.head(ctx); err != nil {
			return res, 0, err
		}
	}

	tmp, idx, err := r.tempIndex()
	if err != nil {
		return res, 0, err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + idx}

	tree, leftOut, err := c.snapshot(ctx, r, env)
	if err != nil {
		return res, 0, err
	}
	res.LeftOut, res.Tree = leftOut, tree
	if prev.id != "" && tree == prev.tree {
		res.ID, res.Skipped = prev.id, true
		return res, prev.depth, nil
	}
	if res.Files, err = r.changedFiles(ctx, parent, tree); err != nil {
		return res, 0, err
	}
	res.FilesChanged = len(res.Files)
	res.Time = time.Now().UTC().Truncate(time.Second)
	depth = prev.depth + 1
	msg := message{
		subject: subjectFor("checkpoint", sessionID, res.Time, res.FilesChanged),
		body:    cleanMessage(text),
		trailers: [][2]string{
			{trailerSession, sessionID},
			{trailerFiles, strconv.Itoa(res.FilesChanged)},
			{trailerDepth, strconv.Itoa(depth)},
		},
	}
	date := fmt.Sprintf("%d +0000", res.Time.Unix())
	cenv := append([]string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, checkpointIdentity...)
	if res.ID, err = r.commitTree(ctx, cenv, tree, parent, msg.String()); err != nil {
		return res, 0, err
	}
	if err := r.updateRef(ctx, ref, res.ID, prev.id, msg.subject); err != nil {
		return res, 0, err
	}
	if r.shadow {
		// The shadow repository's own index is ours: keep the refreshed
		// stat cache for the next checkpoint.
		if err := os.Rename(idx, filepath.Join(r.gitDir, "index")); err != nil {
			return res, depth, fmt.Errorf("keep index of %s: %w", r.gitDir, err)
		}
	}
	return res, depth, nil
}

// tempIndex makes a private directory with a copy of the user's index in it
// (the shadow repository's index for a non-git project). The copy keeps
// git's stat cache, so unchanged files are not hashed again, and keeps the
// original's mtime so that git's racy-entry check sees what it would see on
// the original. git's index.lock for the copy lands in the same private
// directory, which the caller removes.
func (r *repo) tempIndex() (dir, index string, err error) {
	src := r.index
	if r.shadow {
		src = filepath.Join(r.gitDir, "index")
	}
	dir, err = os.MkdirTemp(tempBase(r), "sessiond-index-*")
	if err != nil {
		return "", "", fmt.Errorf("make temporary index: %w", err)
	}
	index = filepath.Join(dir, "index")
	if err := copyFile(src, index); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("copy index %s: %w", src, err)
	}
	return dir, index, nil
}

// copyFile copies src to dst with src's mtime; a missing src (an unborn
// repository without index) leaves dst absent.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// snapshot adds the whole work tree (minus ignored and left-out content) to
// the index named in env and writes it as a tree.
func (c *Checkpointer) snapshot(ctx context.Context, r *repo, env []string) (tree string, leftOut []string, err error) {
	leftOut, excludes, err := c.leftOut(ctx, r, env)
	if err != nil {
		return "", nil, err
	}
	if err := r.addAll(ctx, env, excludes); err != nil {
		return "", nil, err
	}
	tree, err = r.out(ctx, env, "write-tree")
	if err != nil {
		return "", nil, err
	}
	return tree, leftOut, nil
}

// addAll runs git add -A on the whole work tree except the excluded paths,
// which go in as literal exclude pathspecs on stdin (no argument limit, no
// glob surprises, no ignore file of the user's touched).
func (r *repo) addAll(ctx context.Context, env []string, excludes []string) error {
	if len(excludes) == 0 {
		_, err := r.run(ctx, env, nil, "add", "-A")
		return err
	}
	var spec strings.Builder
	spec.WriteString(".\x00")
	for _, p := range excludes {
		spec.WriteString(":(exclude,literal)" + p + "\x00")
	}
	_, err := r.run(ctx, env, []byte(spec.String()), "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
	return err
}

// leftOut finds the untracked content that stays out of a checkpoint:
// untracked files over MaxFileSize and untracked LeaveOut directories.
//
// git ls-files -o --directory lists wholly untracked directories as one
// entry without descending into them, so a node_modules costs one line, not
// one per file. Entries are excluded exactly as
// listed, so a tracked file is never excluded, even in a directory named
// like a LeaveOut one. Wholly untracked directories are searched in Go for
// LeaveOut directories and large files, and what git ignores among those
// finds is dropped with one git check-ignore.
func (c *Checkpointer) leftOut(ctx context.Context, r *repo, env []string) (report, excludes []string, err error) {
	res, err := r.run(ctx, env, nil, "ls-files", "-o", "--directory", "--exclude-standard", "-z")
	if err != nil {
		return nil, nil, err
	}
	reported := map[string]bool{}
	add := func(exclude, rep string) {
		excludes = append(excludes, exclude)
		if !reported[rep] {
			reported[rep] = true
			report = append(report, rep)
		}
	}
	var found []string // in untracked directories: may still be ignored
	for _, p := range splitNUL(res.stdout) {
		isDir := strings.HasSuffix(p, "/")
		p = strings.TrimSuffix(p, "/")
		if d := heavyDir(p, isDir, c.opt.LeaveOut); d != "" {
			add(p, d+"/")
			continue
		}
		if isDir {
			found = append(found, c.searchUntracked(r.top, p)...)
			continue
		}
		fi, err := os.Lstat(filepath.Join(r.top, filepath.FromSlash(p)))
		if err == nil && fi.Mode().IsRegular() && fi.Size() > c.opt.MaxFileSize {
			add(p, p)
		}
	}
	if len(found) > 0 {
		var stdin strings.Builder
		for _, p := range found {
			stdin.WriteString(strings.TrimSuffix(p, "/") + "\x00")
		}
		g := r.gitRun(env, []byte(stdin.String()))
		g.okCodes = []int{1}
		res, err := git(ctx, g, "check-ignore", "-z", "--stdin")
		if err != nil {
			return nil, nil, err
		}
		ignored := map[string]bool{}
		for _, p := range splitNUL(res.stdout) {
			ignored[p] = true
		}
		for _, p := range found {
			if !ignored[strings.TrimSuffix(p, "/")] {
				add(strings.TrimSuffix(p, "/"), p)
			}
		}
	}
	slices.Sort(report)
	return report, excludes, nil
}

// searchUntracked walks the untracked directory dir (relative to top) for
// LeaveOut directories (returned with a trailing slash, not descended into)
// and files over MaxFileSize. Nested repositories are not entered: git adds
// them as gitlinks.
func (c *Checkpointer) searchUntracked(top, dir string) []string {
	var found []string
	root := filepath.Join(top, filepath.FromSlash(dir))
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: git add will say so
		}
		rel, _ := filepath.Rel(top, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p == root {
				return nil
			}
			if slices.Contains(c.opt.LeaveOut, d.Name()) {
				found = append(found, rel+"/")
				return filepath.SkipDir
			}
			if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Size() > c.opt.MaxFileSize {
				found = append(found, rel)
			}
		}
		return nil
	})
	return found
}

// heavyDir returns the leading part of path up to and including its first
// directory named in names, or "". The last element counts when path is a
// directory.
func heavyDir(path string, isDir bool, names []string) string {
	dirs := strings.Split(path, "/")
	n := len(dirs) - 1
	if isDir {
		n++
	}
	for i := range n {
		if slices.Contains(names, dirs[i]) {
			return strings.Join(dirs[:i+1], "/")
		}
	}
	return ""
}

// changedFiles lists the paths that differ between commit-or-tree parent and
// tree; every path of tree when parent is "".
func (r *repo) changedFiles(ctx context.Context, parent, tree string) ([]string, error) {
	var res gitResult
	var err error
	if parent == "" {
		res, err = r.run(ctx, nil, nil, "ls-tree", "-r", "--full-tree", "--name-only", "-z", tree)
	} else {
		res, err = r.run(ctx, nil, nil, "diff-tree", "-r", "--name-only", "-z", "--no-renames", "--no-commit-id", parent, tree)
	}
	if err != nil {
		return nil, err
	}
	return splitNUL(res.stdout), nil
}

// commitTree writes a commit of tree with parent (none if "") and returns it.
func (r *repo) commitTree(ctx context.Context, env []string, tree, parent, msg string) (string, error) {
	args := []string{"commit-tree", "--no-gpg-sign", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	args = append(args, "-F", "-")
	res, err := r.run(ctx, env, []byte(msg), args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.stdout)), nil
}

// updateRef moves ref from old ("" for: must not exist) to id, with a reflog
// entry, failing with ErrConflict if ref is not at old.
func (r *repo) updateRef(ctx context.Context, ref, id, old, reason string) error {
	_, err := r.run(ctx, nil, nil, "-c", "core.logAllRefUpdates=always",
		"update-ref", "--create-reflog", "-m", "sessiond: "+reason, ref, id, old)
	return err
}

// takeCommit commits work in progress on the current branch with the user's
// index. The caller holds the repository lock.
func (c *Checkpointer) takeCommit(ctx context.Context, r *repo, sessionID, text string) (Result, error) {
	if what := r.inProgress(); what != "" {
		return Result{}, fmt.Errorf("a %s is in progress: %w", what, ErrInProgress)
	}
	res0, err := git(ctx, gitRun{dir: r.top, timeout: r.timeout, okCodes: []int{1}}, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		return Result{}, err
	}
	if res0.code == 1 {
		return Result{}, fmt.Errorf("cannot commit on a detached HEAD: %w", ErrDetached)
	}
	res := Result{Ref: strings.TrimSpace(string(res0.stdout))}
	report, excludes, err := c.leftOut(ctx, r, nil)
	if err != nil {
		return res, err
	}
	res.LeftOut = report
	if err := r.addAll(ctx, nil, excludes); err != nil {
		return res, err
	}
	staged, err := git(ctx, gitRun{dir: r.top, timeout: r.timeout, okCodes: []int{1}}, "diff", "--cached", "--quiet", "--no-ext-diff")
	if err != nil {
		return res, err
	}
	if staged.code == 0 {
		res.Skipped = true
		res.ID, err = r.head(ctx)
		if err == nil && res.ID != "" {
			res.Tree, err = r.out(ctx, nil, "rev-parse", res.ID+"^{tree}")
		}
		return res, err
	}
	tree, err := r.out(ctx, nil, "write-tree")
	if err != nil {
		return res, err
	}
	parent, err := r.head(ctx)
	if err != nil {
		return res, err
	}
	if res.Files, err = r.changedFiles(ctx, parent, tree); err != nil {
		return res, err
	}
	res.Tree, res.FilesChanged = tree, len(res.Files)
	res.Time = time.Now().UTC().Truncate(time.Second)
	msg := message{
		subject: subjectFor("WIP checkpoint", sessionID, res.Time, res.FilesChanged),
		body:    cleanMessage(text),
		trailers: [][2]string{
			{trailerSession, sessionID},
			{trailerFiles, strconv.Itoa(res.FilesChanged)},
		},
	}
	var env []string
	if _, err := r.out(ctx, nil, "var", "GIT_COMMITTER_IDENT"); err != nil {
		env = checkpointIdentity // no identity configured: commit as sessiond
	}
	// --no-verify and no hooks: a checkpoint runs nothing of the user's.
	// --no-gpg-sign: a signing prompt would hang an unattended checkpoint.
	if _, err := r.run(ctx, env, []byte(msg.String()), "commit", "--no-verify", "--no-gpg-sign", "-q", "-F", "-"); err != nil {
		return res, err
	}
	res.ID, err = r.head(ctx)
	return res, err
}
