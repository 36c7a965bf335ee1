package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RefPrefix is the namespace of checkpoint refs: one ref per session,
// RefPrefix + session id.
const RefPrefix = "refs/sessiond/checkpoints/"

// repo is a resolved project: where its work tree and git directory are, and
// how to run git on it.
type repo struct {
	project   string // the project dir, absolute, symlinks resolved
	top       string // root of the work tree
	gitDir    string // per-worktree git dir (.git, or .git/worktrees/NAME)
	commonDir string // shared git dir (refs, objects); the lock key
	index     string // the user's index file ("" for a shadow repository)
	shadow    bool   // a shadow repository under the state dir
	timeout   time.Duration
}

// ProjectID is the id of a project directory: the first 12 hex digits of the
// sha256 of its absolute, symlink-resolved path.
func ProjectID(dir string) (string, error) {
	p, err := projectPath(dir)
	if err != nil {
		return "", err
	}
	return projectIDOf(p), nil
}

func projectIDOf(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:])[:12]
}

// projectPath returns dir absolute with symlinks resolved, and checks that it
// is a directory.
func projectPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("project dir %s: %w", dir, err)
	}
	p, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("project dir %s: %w", dir, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("project dir %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("project dir %s: not a directory", dir)
	}
	return p, nil
}

// ShadowDir is where the shadow repository of a non-git project lives.
func ShadowDir(stateDir, projectID string) string {
	return filepath.Join(stateDir, "shadow", projectID+".git")
}

// resolve finds the repository of dir. A directory that is in no git work
// tree gets a shadow repository under stateDir; it is created only when
// create is set (a list of a project that never had a checkpoint creates
// nothing). exists is false when the shadow repository is absent.
func resolve(ctx context.Context, dir, stateDir string, timeout time.Duration, create bool) (r *repo, exists bool, err error) {
	p, err := projectPath(dir)
	if err != nil {
		return nil, false, err
	}
	out, err := git(ctx, gitRun{dir: p, timeout: timeout},
		"rev-parse", "--path-format=absolute",
		"--git-dir", "--git-common-dir", "--show-toplevel", "--git-path", "index")
	if err == nil {
		lines := strings.Split(strings.TrimRight(string(out.stdout), "\n"), "\n")
		if len(lines) != 4 {
			return nil, false, fmt.Errorf("git rev-parse in %s: unexpected output %q", p, out.stdout)
		}
		return &repo{
			project: p, gitDir: lines[0], commonDir: lines[1], top: lines[2], index: lines[3],
			timeout: timeout,
		}, true, nil
	}
	if errors.Is(err, ErrNoGit) {
		return nil, false, err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "must be run in a work tree"):
		return nil, false, fmt.Errorf("resolve repository of %s: %w", p, ErrNotWorkTree)
	case !strings.Contains(msg, "not a git repository"):
		return nil, false, fmt.Errorf("resolve repository of %s: %w", p, err)
	}
	// A .git that git does not accept (objects missing, HEAD garbled) is a
	// broken repository, not a reason to start a shadow one beside it.
	if _, serr := os.Lstat(filepath.Join(p, ".git")); serr == nil {
		return nil, false, fmt.Errorf("resolve repository of %s: %s/.git is not a usable git directory: %w: %w", p, p, ErrNotWorkTree, err)
	}
	if stateDir == "" {
		return nil, false, fmt.Errorf("resolve repository of %s: %w", p, ErrNoStateDir)
	}
	sd := ShadowDir(stateDir, projectIDOf(p))
	r = &repo{project: p, top: p, gitDir: sd, commonDir: sd, shadow: true, timeout: timeout}
	if _, serr := os.Stat(filepath.Join(sd, "HEAD")); serr == nil {
		return r, true, nil
	}
	if !create {
		return r, false, nil
	}
	if err := r.initShadow(ctx, stateDir); err != nil {
		return nil, false, err
	}
	return r, true, nil
}

// initShadow creates the bare shadow repository. It is built in a temporary
// directory and renamed into place, so a failed init leaves nothing behind.
func (r *repo) initShadow(ctx context.Context, stateDir string) error {
	parent := filepath.Dir(r.gitDir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	tmp, err := os.MkdirTemp(parent, ".init-*")
	if err != nil {
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	defer os.RemoveAll(tmp)
	if _, err := git(ctx, gitRun{dir: parent, timeout: r.timeout}, "init", "-q", "--bare", tmp); err != nil {
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	for _, kv := range [][2]string{
		{"core.logAllRefUpdates", "always"},
		{"sessiond.project", r.project},
	} {
		if _, err := git(ctx, gitRun{dir: parent, timeout: r.timeout}, "--git-dir="+tmp, "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
		}
	}
	// The daemon's own files never go into a checkpoint: the project's
	// .sessiond/, and the state dir if it lies inside the project.
	exclude := "/.sessiond/\n"
	if rel, err := filepath.Rel(r.project, stateDir); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		exclude += "/" + filepath.ToSlash(rel) + "/\n"
	}
	if err := os.MkdirAll(filepath.Join(tmp, "info"), 0o700); err != nil {
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "info", "exclude"), []byte(exclude), 0o600); err != nil {
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	if err := os.Rename(tmp, r.gitDir); err != nil {
		if _, serr := os.Stat(filepath.Join(r.gitDir, "HEAD")); serr == nil {
			return nil // another process made it first
		}
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	return nil
}

// run runs git on the repository, from the top of its work tree.
func (r *repo) run(ctx context.Context, env []string, stdin []byte, args ...string) (gitResult, error) {
	return git(ctx, r.gitRun(env, stdin), args...)
}

func (r *repo) gitRun(env []string, stdin []byte) gitRun {
	g := gitRun{dir: r.top, env: env, stdin: stdin, timeout: r.timeout}
	if r.shadow {
		g.pre = []string{"--git-dir=" + r.gitDir, "--work-tree=" + r.top}
	}
	return g
}

// out runs git and returns its stdout as a trimmed string.
func (r *repo) out(ctx context.Context, env []string, args ...string) (string, error) {
	res, err := r.run(ctx, env, nil, args...)
	return strings.TrimSpace(string(res.stdout)), err
}

// head returns the commit HEAD points at, or "" on an unborn branch.
func (r *repo) head(ctx context.Context) (string, error) {
	res, err := git(ctx, gitRun{dir: r.top, pre: r.gitRun(nil, nil).pre, timeout: r.timeout, okCodes: []int{1}},
		"rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", err
	}
	if res.code == 1 {
		return "", nil
	}
	return strings.TrimSpace(string(res.stdout)), nil
}

// inProgress names the operation that is half done in the repository (merge,
// rebase, ...), or "".
func (r *repo) inProgress() string {
	for _, f := range []struct{ path, what string }{
		{"MERGE_HEAD", "merge"},
		{"rebase-merge", "rebase"},
		{"rebase-apply", "rebase or am"},
		{"CHERRY_PICK_HEAD", "cherry-pick"},
		{"REVERT_HEAD", "revert"},
		{"BISECT_LOG", "bisect"},
	} {
		if _, err := os.Lstat(filepath.Join(r.gitDir, f.path)); err == nil {
			return f.what
		}
	}
	return ""
}
