package worktree

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessiond/sessiond/daemon/checkpoint"
)

// git runs one hardened git command (checkpoint.Git) in dir as cred and
// returns its trimmed stdout.
func git(ctx context.Context, dir string, cred *checkpoint.Credential, args ...string) (string, error) {
	out, err := runGit(ctx, checkpoint.GitRequest{Dir: dir, Args: args, Credential: cred})
	return strings.TrimSpace(string(out.Stdout)), err
}

// runGit is checkpoint.Git, with the commands that change a repository's
// list of worktrees (git worktree add, remove, prune) one at a time per
// repository: git reads every worktree's files under .git/worktrees as it
// adds one, and fails on one that another add has begun ("failed to read
// .git/worktrees/NAME/commondir").
func runGit(ctx context.Context, req checkpoint.GitRequest) (checkpoint.GitOutput, error) {
	if len(req.Args) > 1 && req.Args[0] == "worktree" && req.Args[1] != "list" {
		mu := repoLock(req.Dir)
		mu.Lock()
		defer mu.Unlock()
	}
	return checkpoint.Git(ctx, req)
}

var repoLocks sync.Map // repository dir → *sync.Mutex

func repoLock(dir string) *sync.Mutex {
	mu, _ := repoLocks.LoadOrStore(filepath.Clean(dir), new(sync.Mutex))
	return mu.(*sync.Mutex)
}

// listWorktrees is git worktree list. A worktree being added meanwhile
// (by another start, or by the user's own git) is a directory under
// .git/worktrees whose files are not all written yet, on which the list
// fails ("failed to read .git/worktrees/NAME/commondir"); the add is over
// within milliseconds, so the list is tried again, a few times.
func listWorktrees(ctx context.Context, dir string, cred *checkpoint.Credential) (checkpoint.GitOutput, error) {
	wait := 10 * time.Millisecond
	for try := 1; ; try++ {
		out, err := checkpoint.Git(ctx, checkpoint.GitRequest{Dir: dir, Credential: cred, Args: []string{"worktree", "list", "--porcelain", "-z"}})
		if err == nil || try == listTries || !strings.Contains(err.Error(), "failed to read") || !strings.Contains(err.Error(), "worktrees/") {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// listTries bounds the tries of listWorktrees: 10+20+...+160 ms of waits.
const listTries = 5

// gitOK is git with exit codes besides 0 that are answers, not errors.
func gitOK(ctx context.Context, dir string, cred *checkpoint.Credential, ok []int, args ...string) (string, int, error) {
	out, err := checkpoint.Git(ctx, checkpoint.GitRequest{Dir: dir, Args: args, Credential: cred, OKCodes: ok})
	return strings.TrimSpace(string(out.Stdout)), out.Code, err
}

// mainWorkTree returns the main work tree of the repository dir is in:
// a linked worktree's repository is the one it was made from.
func mainWorkTree(ctx context.Context, dir string, cred *checkpoint.Credential) (string, error) {
	bare, err := git(ctx, dir, cred, "rev-parse", "--is-bare-repository")
	if err != nil {
		if strings.Contains(err.Error(), "not a git repository") {
			return "", fmt.Errorf("%s: %w (a worktree is made from a git repository)", dir, ErrNotRepo)
		}
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if bare == "true" {
		return "", fmt.Errorf("%s is a %w: it has no work tree to branch from; start from a clone of it", dir, ErrBare)
	}
	out, err := listWorktrees(ctx, dir, cred)
	if err != nil {
		return "", fmt.Errorf("list the worktrees of %s: %w", dir, err)
	}
	first, bareMain := "", false
	for _, f := range strings.Split(string(out.Stdout), "\x00") {
		if f == "" {
			break // the end of the first record
		}
		if p, ok := strings.CutPrefix(f, "worktree "); ok {
			first = p
		}
		if f == "bare" {
			bareMain = true
		}
	}
	if first == "" || bareMain {
		// A linked worktree of a bare repository: its own work tree is
		// the one to branch from.
		top, err := git(ctx, dir, cred, "rev-parse", "--path-format=absolute", "--show-toplevel")
		if err != nil {
			return "", fmt.Errorf("%s: %w", dir, err)
		}
		first = top
	}
	if res, err := filepath.EvalSymlinks(first); err == nil {
		first = res
	}
	return first, nil
}

// branchExists reports whether refs/heads/branch exists in repo.
func branchExists(ctx context.Context, repo string, cred *checkpoint.Credential, branch string) (bool, error) {
	_, code, err := gitOK(ctx, repo, cred, []int{1}, "rev-parse", "-q", "--verify", "refs/heads/"+branch)
	if err != nil {
		return false, err
	}
	return code == 0, nil
}

// resolveCommit returns the commit ref names in repo.
func resolveCommit(ctx context.Context, repo string, cred *checkpoint.Credential, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, "\x00\n") {
		return "", fmt.Errorf("--from %q: %w", ref, ErrBadRef)
	}
	sha, code, err := gitOK(ctx, repo, cred, []int{1}, "rev-parse", "-q", "--verify", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return "", err
	}
	if code != 0 || sha == "" {
		return "", fmt.Errorf("--from %q is %w of %s", ref, ErrBadRef, repo)
	}
	return sha, nil
}

// CommitsAhead counts the commits of branch that base does not have,
// in repo.
func CommitsAhead(ctx context.Context, repo string, cred *checkpoint.Credential, base, branch string) (int, error) {
	out, err := git(ctx, repo, cred, "rev-list", "--count", base+"..refs/heads/"+branch, "--")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(out)
	if err != nil {
		return 0, fmt.Errorf("git rev-list --count in %s: unexpected output %q", repo, out)
	}
	return n, nil
}

// ReviewCommand is the command that shows what a worktree's branch did
// since its base: git diff BASE...BRANCH, run in the repository.
func ReviewCommand(repo, base, branch string) string {
	short := base
	if len(short) > 12 {
		short = short[:12]
	}
	return "git -C " + shellQuote(repo) + " diff " + short + "..." + branch
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@=,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
