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

	"github.com/sessiond/sessiond/daemon/state"
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
	index     string // the user's index file (the shadow repository's own for a shadow)
	shadow    bool   // a shadow repository under the state dir
	hashLen   int    // object id length in bytes: 20 (sha1) or 32 (sha256)
	timeout   time.Duration
	cred      *Credential
	config    [][2]string // per-repository and per-call config overrides
	// temps names the call's temporary directories (nil: names of no
	// state dir, never swept).
	temps *tempNames
}

// where names the project of one call and how git runs for it.
type where struct {
	dir        string
	shadowRoot string // where shadow repositories live; "" for Options.StateDir/shadow
	cred       *Credential
}

// ProjectID is the id of a project directory: the first 12 hex digits of the
// sha256 of its absolute, symlink-resolved path.
func ProjectID(dir string) (string, error) {
	p, err := projectPath(dir, nil)
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
func projectPath(dir string, cred *Credential) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("project dir %s: %w", dir, err)
	}
	files := state.FilesOf(cred)
	p, err := files.Resolve(abs)
	if err != nil {
		return "", fmt.Errorf("project dir %s: %w", dir, err)
	}
	fi, err := files.Stat(p)
	if err != nil {
		return "", fmt.Errorf("project dir %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("project dir %s: not a directory", dir)
	}
	return p, nil
}

// ShadowDir is where the shadow repository of a non-git project lives with
// the default shadow root, StateDir/shadow.
func ShadowDir(stateDir, projectID string) string {
	return ShadowPath(filepath.Join(stateDir, "shadow"), projectID)
}

// ShadowPath is where the shadow repository of a non-git project lives
// under a shadow root (a request's ShadowRoot).
func ShadowPath(shadowRoot, projectID string) string {
	return filepath.Join(shadowRoot, projectID+".git")
}

// resolve finds the repository of w.dir. A directory that is in no git work
// tree gets a shadow repository under the shadow root; it is created only
// when create is set (a list of a project that never had a checkpoint
// creates nothing). exists is false when the shadow repository is absent.
func resolve(ctx context.Context, w where, stateDir string, timeout time.Duration, create bool) (r *repo, exists bool, err error) {
	p, err := projectPath(w.dir, w.cred)
	if err != nil {
		return nil, false, err
	}
	out, err := git(ctx, gitRun{dir: p, timeout: timeout, cred: w.cred},
		"rev-parse", "--path-format=absolute",
		"--git-dir", "--git-common-dir", "--show-toplevel", "--git-path", "index", "--show-object-format")
	if err == nil {
		lines := strings.Split(strings.TrimRight(string(out.stdout), "\n"), "\n")
		if len(lines) != 5 {
			return nil, false, fmt.Errorf("git rev-parse in %s: unexpected output %q", p, out.stdout)
		}
		return &repo{
			project: p, gitDir: lines[0], commonDir: lines[1], top: lines[2], index: lines[3],
			hashLen: hashLenOf(lines[4]), timeout: timeout, cred: w.cred,
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
	root := w.shadowRoot
	if root == "" {
		if stateDir == "" {
			return nil, false, fmt.Errorf("resolve repository of %s: %w", p, ErrNoStateDir)
		}
		root = filepath.Join(stateDir, "shadow")
	}
	sd := ShadowPath(root, projectIDOf(p))
	r = &repo{project: p, top: p, gitDir: sd, commonDir: sd, index: filepath.Join(sd, "index"),
		shadow: true, hashLen: 20, timeout: timeout, cred: w.cred}
	if _, serr := state.FilesOf(w.cred).Stat(filepath.Join(sd, "HEAD")); serr == nil {
		if f, ferr := state.FilesOf(w.cred).ReadFile(filepath.Join(sd, "config"), 64<<10); ferr == nil && strings.Contains(string(f), "sha256") {
			r.hashLen = 32
		}
		return r, true, nil
	}
	if !create {
		return r, false, nil
	}
	if err := r.initShadow(ctx, stateDir, root); err != nil {
		return nil, false, err
	}
	return r, true, nil
}

func hashLenOf(format string) int {
	if format == "sha256" {
		return 32
	}
	return 20
}

// initShadow creates the bare shadow repository, owned by the credential's
// user if there is one. It is built in a temporary directory and renamed
// into place, so a failed init leaves nothing behind.
func (r *repo) initShadow(ctx context.Context, stateDir, shadowRoot string) error {
	parent := filepath.Dir(r.gitDir)
	if err := mkdirAll(r.cred, parent); err != nil {
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	tmp, err := mkdirTemp(r.cred, parent, ".init-*")
	if err != nil {
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	defer removeAll(r.cred, tmp)
	// --template=: no hooks or other files from the user's template dir;
	// --shared=0600: what git makes in it is the owner's alone (0600, 0700).
	if _, err := git(ctx, gitRun{dir: parent, timeout: r.timeout, cred: r.cred}, "init", "-q", "--bare", "--template=", "--shared=0600", tmp); err != nil {
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	for _, kv := range [][2]string{
		{"core.logAllRefUpdates", "always"},
		{"sessiond.project", r.project},
	} {
		if _, err := git(ctx, gitRun{dir: parent, timeout: r.timeout, cred: r.cred}, "--git-dir="+tmp, "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
		}
	}
	// The daemon's own files never go into a checkpoint: the project's
	// .sessiond/, and the state dir or the shadow root if inside the project.
	exclude := "/.sessiond/\n"
	for _, d := range []string{stateDir, shadowRoot} {
		if d == "" {
			continue
		}
		if rel, err := filepath.Rel(r.project, d); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			exclude += "/" + filepath.ToSlash(rel) + "/\n"
		}
	}
	// As the user: the directory is the user's, who may have swapped what
	// is in it while git ran.
	err = asUser(r.cred, func() error {
		info := filepath.Join(tmp, "info")
		if err := os.Mkdir(info, 0o700); err != nil && !os.IsExist(err) {
			return err
		}
		if err := createFile(filepath.Join(info, "exclude"), strings.NewReader(exclude), time.Time{}); err != nil {
			return err
		}
		if err := os.Rename(tmp, r.gitDir); err != nil {
			if _, serr := os.Stat(filepath.Join(r.gitDir, "HEAD")); serr == nil {
				return nil // another process made it first
			}
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create shadow repository for %s: %w", r.project, err)
	}
	return nil
}

// run runs git on the repository, from the top of its work tree.
func (r *repo) run(ctx context.Context, env []string, stdin []byte, args ...string) (gitResult, error) {
	return git(ctx, r.gitRun(env, stdin), args...)
}

func (r *repo) gitRun(env []string, stdin []byte) gitRun {
	return gitRun{dir: r.top, pre: r.shadowArgs(), env: env, config: r.config, cred: r.cred, stdin: stdin, timeout: r.timeout}
}

// shadowArgs point git at a shadow repository and its work tree.
func (r *repo) shadowArgs() []string {
	if r.shadow {
		return []string{"--git-dir=" + r.gitDir, "--work-tree=" + r.top}
	}
	return nil
}

// out runs git and returns its stdout as a trimmed string.
func (r *repo) out(ctx context.Context, env []string, args ...string) (string, error) {
	res, err := r.run(ctx, env, nil, args...)
	return strings.TrimSpace(string(res.stdout)), err
}

// head returns the commit HEAD points at, or "" on an unborn branch.
func (r *repo) head(ctx context.Context) (string, error) {
	g := r.gitRun(nil, nil)
	g.okCodes = []int{1}
	res, err := git(ctx, g, "rev-parse", "-q", "--verify", "HEAD^{commit}")
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
