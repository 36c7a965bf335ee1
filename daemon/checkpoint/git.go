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

// gitRun describes one git invocation.
type gitRun struct {
	dir     string      // working directory
	pre     []string    // global options before the subcommand (--git-dir, -c ...)
	env     []string    // extra environment, KEY=VALUE
	config  [][2]string // extra config overrides (key, value), as strong as -c
	cred    *Credential // the user git runs as; nil: the daemon's
	stdin   []byte
	timeout time.Duration
	okCodes []int // exit codes besides 0 that are not errors
}

// gitResult is what a git command printed and how it exited.
type gitResult struct {
	stdout []byte
	stderr string
	code   int
}

// baseArgs go before every git command: no pager, and no replace refs that
// would make the commits we read differ from the stored ones.
var baseArgs = []string{"--no-pager", "--no-replace-objects"}

// hardConfig is set for every git command, through GIT_CONFIG_KEY_n (as
// strong as -c, and a key is never split at an "=" in it). It turns off
// everything that would run a program named by the repository's or the
// user's config — a checkpoint runs nothing of the user's, and a root daemon
// nothing as root: hooks (the reference-transaction hook of update-ref
// included), fsmonitor, pagers, editors, askpass and credential helpers,
// ssh and every transport, signing (and signature checks in log), automatic
// gc and maintenance. Filter drivers are turned off by name (filterConfig);
// external diff and textconv never run because only plumbing diffs without
// patches are used (and --no-ext-diff --no-textconv where a diff could).
// The rest keeps output stable and quiet, and keeps a split index of the
// user's from being split into a private copy's directory.
var hardConfig = [][2]string{
	{"core.hooksPath", os.DevNull},
	{"core.fsmonitor", "false"},
	{"core.pager", "cat"},
	{"core.editor", "false"},
	{"sequence.editor", "false"},
	{"core.askPass", ""},
	{"credential.helper", ""},
	{"core.sshCommand", "false"},
	{"protocol.allow", "never"},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"log.showSignature", "false"},
	{"gpg.program", "false"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
	{"submodule.recurse", "false"},
	{"core.splitIndex", "false"},
	{"core.quotePath", "false"},
	{"color.ui", "false"},
	{"advice.addEmbeddedRepo", "false"},
	{"advice.addIgnoredFile", "false"},
	{"advice.detachedHead", "false"},
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
	full := make([]string, 0, len(baseArgs)+len(r.pre)+len(args))
	full = append(full, baseArgs...)
	full = append(full, r.pre...)
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, path, full...)
	cmd.Dir = r.dir
	cmd.Env = gitEnv(r.cred, r.config, r.env)
	cmd.SysProcAttr = sysProcAttr(r.cred)
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
	res := gitResult{stdout: stdout.Bytes(), stderr: stderr.String()}
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

// gitEnv is the small, clean environment of sessiond's git: PATH, the
// user's HOME (the credential's, else the daemon's; and the daemon's
// XDG_CONFIG_HOME when it runs git as itself), C messages, no prompts, no
// optional locks on the user's index, no system config or attributes (the
// administrator's settings are not the project's), and the config
// overrides. Nothing else of the daemon's environment reaches git: no
// GIT_DIR or GIT_INDEX_FILE pointing elsewhere, no GIT_ASKPASS or
// GIT_EXTERNAL_DIFF, no GIT_TRACE files.
func gitEnv(cred *Credential, config [][2]string, extra []string) []string {
	env := make([]string, 0, 16+2*(len(hardConfig)+len(config))+len(extra))
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env = append(env, "PATH="+path)
	switch {
	case cred == nil:
		for _, k := range []string{"HOME", "XDG_CONFIG_HOME"} {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	case cred.Home != "":
		env = append(env, "HOME="+cred.Home)
	}
	env = append(env,
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_ADVICE=0",
	)
	n := 0
	for _, set := range [][][2]string{hardConfig, config} {
		for _, kv := range set {
			env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, kv[1]))
			n++
		}
	}
	env = append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n))
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
