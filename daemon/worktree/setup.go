package worktree

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
)

// SetupTimeout bounds each worktree_setup command.
const SetupTimeout = 15 * time.Minute

// setupTail is how much of the setup's output a failure quotes.
const setupTail = 4 << 10

// runSetup runs the commands in dir one after the other, as cred (nil:
// the daemon's user), with env, stdin /dev/null, each in a process group
// of its own that a timeout or a cancelled ctx kills whole. Output goes to
// out (if not nil); the first failure stops and is returned with the tail
// of its output.
func runSetup(ctx context.Context, dir string, cmds config.SetupCommands, env []string, owner *state.Owner, out io.Writer, cg *cgroup.Group) error {
	cred := procCredential(owner)
	for i, c := range cmds {
		tail := &tailBuffer{max: setupTail}
		w := io.Writer(tail)
		if out != nil {
			w = io.MultiWriter(tail, out)
			fmt.Fprintf(out, "sessiond: worktree setup: %s\n", c)
		}
		cctx, cancel := context.WithTimeout(ctx, SetupTimeout)
		args := c.Args()
		// The executable is looked up with the user's rights and PATH.
		path, err := state.FilesOf(owner).LookPath(args[0], dir, env)
		if err != nil {
			cancel()
			return fmt.Errorf("%w: worktree_setup[%d] %q in %s: %v", ErrSetup, i, c.String(), dir, err)
		}
		cmd := exec.CommandContext(cctx, path, args[1:]...)
		cmd.Args[0] = args[0]
		cmd.Dir = dir
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = w, w
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
		cmd.Cancel = proc.CancelGroup(cmd)
		cmd.WaitDelay = 5 * time.Second
		err = proc.RunIn(cg, cgroup.LeafCommand, cmd)
		timedOut := cctx.Err() == context.DeadlineExceeded
		cancel()
		if err == nil {
			continue
		}
		why := err.Error()
		switch {
		case timedOut:
			why = fmt.Sprintf("still running after %s", SetupTimeout)
		case ctx.Err() != nil:
			return fmt.Errorf("worktree_setup[%d] %q: %w", i, c.String(), ctx.Err())
		}
		msg := fmt.Sprintf("worktree_setup[%d] %q in %s: %s", i, c.String(), dir, why)
		if t := strings.TrimSpace(tail.String()); t != "" {
			msg += "; its last output:\n" + t
		}
		return fmt.Errorf("%w: %s", ErrSetup, msg)
	}
	return nil
}

// setupEnv is the environment of the setup commands: base, with the
// worktree's own variables.
func setupEnv(base []string, e Entry) []string {
	env := append([]string(nil), base...)
	env = append(env, "SESSIOND_WORKTREE="+e.Path, "SESSIOND_WORKTREE_NAME="+e.Name,
		"SESSIOND_WORKTREE_BRANCH="+e.Branch, "SESSIOND_REPO="+e.Repo)
	if e.Port != 0 {
		env = append(env, fmt.Sprintf("PORT=%d", e.Port), fmt.Sprintf("SESSIOND_PORT=%d", e.Port))
	}
	if os.Getenv("PATH") != "" && !hasKey(env, "PATH") {
		env = append(env, "PATH="+os.Getenv("PATH"))
	}
	return env
}

func hasKey(env []string, k string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		rest := append([]byte(nil), t.b.Bytes()[over:]...)
		t.b.Reset()
		t.b.Write(rest)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
