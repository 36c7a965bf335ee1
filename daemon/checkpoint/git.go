package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/daemon/proc"
)

// DefaultTimeout bounds each git command when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// killDelay is how long git gets to remove its lock files after SIGTERM
// before it is killed.
const killDelay = 5 * time.Second

// gitEnvDrop lists variables that would point git at another repository,
// index or object store than the one this package chose, or change how
// pathspecs are read.
var gitEnvDrop = map[string]bool{
	"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true,
	"GIT_OBJECT_DIRECTORY": true, "GIT_ALTERNATE_OBJECT_DIRECTORIES": true,
	"GIT_COMMON_DIR": true, "GIT_NAMESPACE": true, "GIT_PREFIX": true,
	"GIT_LITERAL_PATHSPECS": true, "GIT_GLOB_PATHSPECS": true,
	"GIT_NOGLOB_PATHSPECS": true, "GIT_ICASE_PATHSPECS": true,
	"GIT_QUARANTINE_PATH": true, "GIT_REPLACE_REF_BASE": true,
	"LC_ALL": true, "LANG": true, "LANGUAGE": true,
}

// gitRun describes one git invocation.
type gitRun struct {
	dir     string   // working directory
	pre     []string // global options before the subcommand (--git-dir, -c ...)
	env     []string // extra environment, KEY=VALUE
	stdin   []byte
	timeout time.Duration
	okCodes []int // exit codes besides 0 that are not errors
}

// gitResult is what a git command printed and how it exited.
type gitResult struct {
	stdout []byte
	code   int
}

// baseConfig is passed to every git command: no hooks (a checkpoint must run
// nothing of the user's), no pager, stable unquoted path output, and no
// replace refs that would make the commits we read differ from the stored ones.
var baseConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.quotePath=false",
	"-c", "color.ui=false",
	"-c", "advice.addEmbeddedRepo=false",
	"-c", "advice.detachedHead=false",
	"--no-replace-objects",
}

// git runs git with args and returns its stdout. The error names the command
// and the directory, carries git's stderr, and wraps a sentinel when git's
// message says what went wrong (ErrNoGit, ErrCorruptIndex, ...).
func git(ctx context.Context, r gitRun, args ...string) (gitResult, error) {
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	path, err := exec.LookPath("git")
	if err != nil {
		return gitResult{code: -1}, fmt.Errorf("run git %s in %s: %w", subcommand(args), r.dir, ErrNoGit)
	}
	full := make([]string, 0, len(baseConfig)+len(r.pre)+len(args))
	full = append(full, baseConfig...)
	full = append(full, r.pre...)
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, path, full...)
	cmd.Dir = r.dir
	cmd.Env = gitEnv(r.env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if r.stdin != nil {
		cmd.Stdin = bytes.NewReader(r.stdin)
	}
	// SIGTERM first: git removes its lock files on SIGTERM, not on SIGKILL.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = killDelay

	err = proc.Run(cmd)
	res := gitResult{stdout: stdout.Bytes()}
	if cmd.ProcessState != nil {
		res.code = cmd.ProcessState.ExitCode()
	} else {
		res.code = -1
	}
	if err == nil {
		return res, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		for _, c := range r.okCodes {
			if res.code == c {
				return res, nil
			}
		}
	}
	if errors.Is(err, exec.ErrNotFound) {
		return res, fmt.Errorf("run git %s in %s: %w", subcommand(args), r.dir, ErrNoGit)
	}
	msg := strings.TrimSpace(stderr.String())
	if ctxErr := ctx.Err(); ctxErr != nil {
		return res, fmt.Errorf("git %s in %s: %w (%v) %s", subcommand(args), r.dir, ctxErr, err, msg)
	}
	if s := classify(msg); s != nil {
		return res, fmt.Errorf("git %s in %s: %w: %s (%w)", subcommand(args), r.dir, s, msg, err)
	}
	if msg == "" {
		return res, fmt.Errorf("git %s in %s: %w", subcommand(args), r.dir, err)
	}
	return res, fmt.Errorf("git %s in %s: %w: %s", subcommand(args), r.dir, err, msg)
}

// subcommand names a git command for error messages: the subcommand and its
// first argument, without the global options.
func subcommand(args []string) string {
	n := 0
	for n < len(args) && strings.HasPrefix(args[n], "-") {
		if args[n] == "-c" {
			n++
		}
		n++
	}
	n = min(n, len(args))
	end := min(n+2, len(args))
	return strings.Join(args[n:end], " ")
}

// gitEnv is the daemon's environment without variables that redirect git,
// plus settings that keep git from prompting, from taking optional locks on
// the user's index, and from translating the messages classify reads.
func gitEnv(extra []string) []string {
	env := make([]string, 0, len(os.Environ())+len(extra)+4)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if gitEnvDrop[k] {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_ADVICE=0",
	)
	return append(env, extra...)
}

// splitNUL splits NUL-terminated git output into its fields.
func splitNUL(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	parts := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// splitLines splits git output into its non-empty lines.
func splitLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
