package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
)

// waitDelay is how long a process's output may stay open after it exited
// or was killed (a grandchild that escaped its group still holding it)
// before Wait gives up on it.
const waitDelay = 2 * time.Second

// outputTail is how much of a process's output is kept for its error.
const outputTail = 4 << 10

// process is one helper process: a command sink, notify-send, or a secret
// read as another user.
type process struct {
	argv []string
	dir  string
	env  []string
	cred *syscall.Credential
	// files looks the command up with the rights it runs with.
	files   state.Files
	stdin   []byte
	output  io.Writer // nil: the output is kept (its tail) and returned
	keep    int       // bytes of output kept; 0 means outputTail
	timeout time.Duration
}

// run runs p in a process group of its own, through proc.Start and
// proc.Wait so that the daemon's reaper leaves its exit status alone. At
// the timeout, or when ctx ends, the whole group is killed; whatever the
// process left running in its group is killed when it exits. It returns
// the tail of the output.
func (p *process) run(ctx context.Context) ([]byte, error) {
	if len(p.argv) == 0 || p.argv[0] == "" {
		return nil, fmt.Errorf("empty command: %w", proc.ErrNotFound)
	}
	path, err := p.files.LookPath(p.argv[0], p.dir, p.env)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, path, p.argv[1:]...)
	cmd.Args[0] = p.argv[0]
	cmd.Dir, cmd.Env = p.dir, p.env
	cmd.Stdin = bytes.NewReader(p.stdin)
	tail := &tailBuffer{max: outputTail}
	if p.keep > 0 {
		tail.max = p.keep
	}
	if p.output != nil {
		cmd.Stdout, cmd.Stderr = p.output, p.output
	} else {
		cmd.Stdout, cmd.Stderr = tail, tail
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: p.cred}
	cmd.Cancel = proc.CancelGroup(cmd)
	cmd.WaitDelay = waitDelay
	if err := proc.Start(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.argv[0], err)
	}
	// What the command left running in its group goes with it.
	err = proc.WaitGroup(cmd)
	out := tail.bytes()
	switch {
	case isSuccess(err):
		return out, nil
	case runCtx.Err() != nil && ctx.Err() != nil:
		return out, fmt.Errorf("%s: stopped (%w); its process group was killed", p.argv[0], ctx.Err())
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return out, fmt.Errorf("%s: timed out after %s; its process group was killed", p.argv[0], p.timeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return out, fmt.Errorf("%s: killed by %s%s", p.argv[0], unix.SignalName(ws.Signal()), outputSuffix(out))
		}
		return out, fmt.Errorf("%s: exit status %d%s", p.argv[0], ee.ExitCode(), outputSuffix(out))
	}
	return out, fmt.Errorf("%s: %w", p.argv[0], err)
}

// isSuccess reports whether a Wait error means the process exited with 0:
// ErrWaitDelay only says that something it left behind held its output.
func isSuccess(err error) bool {
	return err == nil || errors.Is(err, exec.ErrWaitDelay)
}

// outputSuffix quotes the last line or so of a failed process's output.
func outputSuffix(out []byte) string {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return ""
	}
	if len(s) > 300 {
		s = "…" + s[len(s)-300:]
	}
	return ": " + strings.ReplaceAll(s, "\n", " | ")
}

// tailBuffer keeps the last max bytes written to it. os/exec writes to it
// from one goroutine at a time (Stdout and Stderr are the same writer) and
// is done before Wait returns.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) bytes() []byte { return t.buf }

// errNoOwner is the refusal to run a project's command, or read its
// secret, with root's rights because the event did not say whose session
// it is.
var errNoOwner = errors.New("a project's rule under a root daemon needs the session's owner to run as; refusing to use root's rights")

// checkOwner refuses what a project's rule would do as root for want of
// an owner. A session of root's own has an Owner with UID 0.
func checkOwner(origin Origin, o *Owner) error {
	if origin == FromProject && o == nil && os.Geteuid() == 0 {
		return errNoOwner
	}
	return nil
}

// credential returns the credential to run a process as o, when the daemon
// is root and o is another user; else nil (the daemon's own rights).
func credential(o *Owner) *syscall.Credential {
	if o == nil || os.Geteuid() != 0 || o.UID == os.Geteuid() {
		return nil
	}
	return o.Credential()
}

// workDir is where a process for ev runs: the project, else the owner's
// home, else "/".
func workDir(ev *Event) string {
	for _, d := range []string{ev.ProjectDir, ownerHome(ev.Owner)} {
		if d == "" {
			continue
		}
		if fi, err := state.FilesOf(ev.Owner).Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return "/"
}

func ownerHome(o *Owner) string {
	if o != nil {
		return o.Home
	}
	h, _ := os.UserHomeDir()
	return h
}

// baseEnv is the environment a process for ev starts from: the session's
// (or the daemon's), with the owner's HOME, USER and LOGNAME when it runs as
// another user, and without the service manager's notification socket.
func baseEnv(ev *Event, cred *syscall.Credential) []string {
	src := ev.Env
	if src == nil {
		src = os.Environ()
	}
	env := make([]string, 0, len(src)+16)
	for _, kv := range src {
		if strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			continue
		}
		env = append(env, kv)
	}
	if cred != nil && ev.Owner != nil {
		env = setEnv(env, "HOME", ev.Owner.Home)
		if ev.Owner.Name != "" {
			env = setEnv(env, "USER", ev.Owner.Name)
			env = setEnv(env, "LOGNAME", ev.Owner.Name)
		}
	}
	return env
}

// setEnv sets k=v in env, replacing every earlier value of k.
func setEnv(env []string, k, v string) []string {
	out := env[:0]
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); name != k {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

// lookupEnv returns the value of k in env (the last one wins, as for exec).
func lookupEnv(env []string, k string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if name, v, ok := strings.Cut(env[i], "="); ok && name == k {
			return v, true
		}
	}
	return "", false
}
