package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// factsTimeout bounds each git command of Facts; the handoff must not wait
// long for them.
const factsTimeout = 30 * time.Second

// GitFacts is what the handoff records about a project's repository.
type GitFacts struct {
	// IsRepo is false for a directory in no git work tree; the other fields
	// are then empty.
	IsRepo bool `json:"is_repo"`
	// Head is the commit HEAD points at, "" on an unborn branch.
	Head string `json:"head"`
	// Branch is the current branch ("" when HEAD is detached); on an unborn
	// branch it is the branch's name.
	Branch string `json:"branch"`
	// Uncommitted lists the paths that git status reports (modified, staged,
	// untracked, ...), relative to the top of the work tree.
	Uncommitted []string `json:"uncommitted"`
	// IndexLock is set when an index.lock exists: another git process is
	// running, or one was killed and left it behind.
	IndexLock bool `json:"index_lock"`
	// GitLog is git log --oneline -10.
	GitLog []string `json:"git_log"`
}

// FactsRequest names the project whose git facts Facts collects.
type FactsRequest struct {
	Dir string
	// Credential, if set, is the user git runs as.
	Credential *Credential
}

// Facts collects git facts about the project without changing anything (no
// index refresh: GIT_OPTIONAL_LOCKS=0), with git hardened as for
// checkpoints. Changes inside submodules' work trees are not looked at
// (--ignore-submodules=dirty: git would run in each with its own config);
// a submodule whose HEAD moved is. A directory outside any git work tree
// gives IsRepo false and no error.
func Facts(ctx context.Context, req FactsRequest) (GitFacts, error) {
	dir := req.Dir
	if !inWorkTree(dir) {
		return GitFacts{}, nil
	}
	var c Checkpointer // no shadow repositories: stateDir ""
	c.opt.Timeout = factsTimeout
	r, _, err := c.resolve(ctx, where{dir: dir, cred: req.Credential}, false)
	switch {
	case errors.Is(err, ErrNoStateDir):
		return GitFacts{}, nil // not a git work tree
	case err != nil:
		return GitFacts{}, fmt.Errorf("git facts of %s: %w", dir, err)
	}
	f := GitFacts{IsRepo: true}
	if f.Head, err = r.head(ctx); err != nil {
		return f, fmt.Errorf("git facts of %s: %w", r.top, err)
	}
	g := r.gitRun(nil, nil)
	g.okCodes = []int{1}
	res, err := git(ctx, g, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil {
		return f, fmt.Errorf("git facts of %s: %w", r.top, err)
	}
	f.Branch = strings.TrimSpace(string(res.stdout))
	if _, err := os.Lstat(r.index + ".lock"); err == nil {
		f.IndexLock = true
	}
	res, err = r.run(ctx, nil, nil, "status", "--porcelain", "-z", "--ignore-submodules=dirty")
	if err != nil {
		return f, fmt.Errorf("git facts of %s: %w", r.top, err)
	}
	f.Uncommitted = parseStatus(res.stdout)
	if f.Head != "" {
		res, err = r.run(ctx, nil, nil, "log", "--oneline", "--no-decorate", "--no-color", "-10", "HEAD", "--")
		if err != nil {
			return f, fmt.Errorf("git facts of %s: %w", r.top, err)
		}
		f.GitLog = splitLines(res.stdout)
	}
	return f, nil
}

// parseStatus reads git status --porcelain -z: "XY path" entries, where a
// rename or copy is followed by its source path as an entry of its own.
func parseStatus(b []byte) []string {
	var paths []string
	f := strings.Split(string(b), "\x00")
	for i := 0; i < len(f); i++ {
		e := f[i]
		if len(e) < 4 {
			continue
		}
		paths = append(paths, e[3:])
		if e[0] == 'R' || e[0] == 'C' || e[1] == 'R' || e[1] == 'C' {
			i++ // the source path
		}
	}
	return paths
}

// LogRequest asks for the recent history of a project's repository.
type LogRequest struct {
	Dir string
	// N is how many commits; 0 means 10.
	N int
	// Credential, if set, is the user git runs as.
	Credential *Credential
}

// RecentLog returns git log --oneline -N of the repository req.Dir is in,
// or nothing for a directory in no repository or one without commits. It
// spawns no git at all when no .git is found above the dir, so that
// starting a session in a plain directory costs no process.
func RecentLog(ctx context.Context, req LogRequest) []string {
	if !inWorkTree(req.Dir) {
		return nil
	}
	n := req.N
	if n <= 0 {
		n = 10
	}
	res, err := git(ctx, gitRun{dir: req.Dir, timeout: factsTimeout, cred: req.Credential, okCodes: []int{128}},
		"log", "--oneline", "--no-decorate", "--no-color", fmt.Sprintf("-%d", n), "HEAD", "--")
	if err != nil || res.code != 0 {
		return nil
	}
	return splitLines(res.stdout)
}

// inWorkTree reports whether dir or one of its parents holds a .git.
func inWorkTree(dir string) bool {
	var st unix.Stat_t // not os.Lstat: each of its answers is an allocation, and every end asks
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if unix.Lstat(filepath.Join(d, ".git"), &st) == nil {
			return true
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}
