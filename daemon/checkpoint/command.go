package checkpoint

import (
	"context"
	"fmt"
	"time"
)

// GitRequest is one git command run by another part of sessiond (the
// worktrees of package worktree) with the hardening of checkpoints: the
// clean environment, the user's credential, and none of the programs a
// repository's or user's config names (hooks, fsmonitor, pagers,
// editors, credential helpers, transports, signing).
type GitRequest struct {
	// Dir is where git runs.
	Dir  string
	Args []string
	// Credential, if set, is the user git runs as.
	Credential *Credential
	// NoFilters also turns off the filter drivers (LFS and the like) that
	// the config of the repository at Dir defines: for commands that
	// check files out. Dir must then be in a work tree.
	NoFilters bool
	// Timeout bounds the command; 0 means DefaultTimeout.
	Timeout time.Duration
	// OKCodes are exit codes besides 0 that are not errors.
	OKCodes []int
	// Env is extra environment, KEY=VALUE.
	Env []string
	// Stdin, if not nil, is the command's standard input.
	Stdin []byte
}

// GitOutput is what a command of Git printed and how it exited.
type GitOutput struct {
	Stdout []byte
	Code   int
}

// Git runs req's command. The error names the command and the directory
// and carries git's message; it wraps ErrNoGit when there is no git, and
// the sentinels of this package when git's message says what went wrong.
func Git(ctx context.Context, req GitRequest) (GitOutput, error) {
	run := gitRun{dir: req.Dir, cred: req.Credential, timeout: req.Timeout, okCodes: req.OKCodes, env: req.Env, stdin: req.Stdin}
	if req.NoFilters {
		var c Checkpointer
		r, _, err := c.resolve(ctx, where{dir: req.Dir, cred: req.Credential}, false)
		if err != nil {
			return GitOutput{Code: -1}, fmt.Errorf("git %s in %s: %w", subcommand(req.Args), req.Dir, err)
		}
		run.config = r.config
	}
	res, err := git(ctx, run, req.Args...)
	return GitOutput{Stdout: res.stdout, Code: res.code}, err
}
