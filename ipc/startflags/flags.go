// Package startflags holds the flags that say how to run a session,
// shared by `sessionctl start` and `sessiond exec` so that both take the
// same spec and make the same ipc.StartRequest of it. It keeps the flag
// library out of package ipc.
package startflags

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

// Flags are the flags that say how to run a session, shared by
// `sessionctl start` and `sessiond exec` so that both take the same spec.
type Flags struct {
	req        ipc.StartRequest
	env        []string
	checkpoint string
	tty        bool
	worktree   string
	noAgent    bool
	noInherit  bool
	priority   int
	queue      bool
	noQueue    bool
	afterAny   string
	fs         *pflag.FlagSet
}

// Bind adds the flags to fs.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.req.Name, "name", "", "session name (default the project directory's name)")
	fs.StringVar(&f.req.Timeout, "timeout", "", "deadline after start (default 4h)")
	fs.StringVar(&f.req.WarnBefore, "warn-before", "", "warning this long before the deadline (default 30m, or a quarter of a timeout under 2h)")
	fs.StringVar(&f.req.WarnSignal, "warn-signal", "", "signal sent at the warning to processes that catch it (default none)")
	fs.BoolVar(&f.req.WarnSignalForce, "warn-signal-force", false, "send --warn-signal even to processes that do not catch it")
	fs.StringVar(&f.req.OnWarning, "on-warning", "", "shell command run at the warning")
	fs.StringVar(&f.req.StopSignal, "stop-signal", "", "graceful stop signal (default SIGTERM; SIGHUP on a terminal)")
	fs.StringVar(&f.req.StopGrace, "stop-grace", "", "time between the stop signal and SIGKILL (default 30s)")
	fs.StringVar(&f.req.IdleTimeout, "idle-timeout", "", "stop after this long without output or file changes (default off)")
	fs.StringVar(&f.checkpoint, "checkpoint", "", `checkpoint schedule, cron or "@every 5m"; "" turns checkpoints off`)
	fs.StringVar(&f.req.Restart, "restart", "", "restart policy: no, on-failure, always")
	fs.StringArrayVar(&f.env, "env", nil, "KEY=VALUE for the command's environment, over this shell's (repeatable)")
	fs.BoolVar(&f.noInherit, "no-inherit-env", false, "run the command with a clean environment, not this shell's (the spec's inherit_env = false)")
	fs.BoolVar(&f.tty, "tty", false, "run the command on a terminal (sessionctl attach, screen, send); --tty=false never (default: a terminal for an interactive claude or codex)")
	fs.StringVar(&f.req.Agent, "agent", "", "the agent the command runs: auto, claude-code, codex, generic (default auto)")
	fs.BoolVar(&f.noAgent, "no-agent-integration", false, "run even a recognised agent untouched (no hooks, no session id, no MCP server)")
	fs.StringVar(&f.req.Resume, "resume", "", "continue an agent conversation: its id, a session's, or a project directory's last (no value: this project's last)")
	fs.Lookup("resume").NoOptDefVal = ipc.ResumeLast
	fs.StringVar(&f.req.WaitingTimeout, "waiting-timeout", "", "stop when the agent has waited this long for input (default off)")
	fs.Int64Var(&f.req.MaxTokens, "max-tokens", 0, "token budget of the agent (default none)")
	fs.Float64Var(&f.req.MaxCostUSD, "max-cost-usd", 0, "cost budget of the agent in USD, where it reports cost (default none)")
	fs.StringVar(&f.req.MemoryMax, "memory-max", "", "memory the session's processes may use together, e.g. 2G; beyond it the kernel kills (end reason oom)")
	fs.StringVar(&f.req.MemoryHigh, "memory-high", "", "memory above which the session is slowed and warned, e.g. 1536M")
	fs.Int64Var(&f.req.PidsMax, "pids-max", 0, "processes and threads the session may have at once")
	fs.Int64Var(&f.req.CPUWeight, "cpu-weight", 0, "the session's CPU share against others, 1-10000 (100 is everyone's default)")
	fs.StringVar(&f.req.CPUMax, "cpu-max", "", "CPU time the session may use, as a percentage of one CPU (150%)")
	fs.StringVar(&f.req.Limits, "limits", "", `strict (refuse a limit the host cannot apply) or best-effort (run without it)`)
	fs.StringVar(&f.req.OnLimit, "on-limit", "", "at the agent's usage limit: wait (for its reset, the deadline paused), stop (end reason limit), ignore (default wait)")
	fs.StringVar(&f.req.StallTimeout, "stall-timeout", "", "mark a working agent stalled, and warn it, after this long without progress (default off)")
	fs.StringVar(&f.req.Pool, "pool", "", "the pool the session counts in (default its agent's account); [pool.NAME] in the daemon's config bounds it")
	fs.IntVar(&f.priority, "priority", 0, "place in the queue against others, -1000 to 1000 (higher starts first)")
	fs.BoolVar(&f.queue, "queue", false, "wait in the queue when the pool is full (the default)")
	fs.BoolVar(&f.noQueue, "no-queue", false, "fail rather than wait when the pool is full")
	fs.StringVar(&f.req.After, "after", "", "start once session ID has ended successfully (queued until then)")
	fs.StringVar(&f.afterAny, "after-any", "", "start once session ID has ended, however it ended")
	f.bindWorktree(fs)
}

// Request returns the start request the flags describe for the project
// directory dir and the command (nil: the project's). A malformed value is
// an error naming the flag, found before any request is sent.
func (f *Flags) Request(dir string, command []string) (ipc.StartRequest, error) {
	req := f.req
	req.Dir, req.Command = dir, command
	if req.Name != "" {
		if err := ipc.CheckName(req.Name); err != nil {
			return req, fmt.Errorf("--%w", err)
		}
	}
	req.Env = map[string]string{}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return req, fmt.Errorf("--env %q: want KEY=VALUE", kv)
		}
		if strings.ContainsRune(kv, 0) {
			return req, fmt.Errorf("--env %s: the value contains a NUL byte", k)
		}
		req.Env[k] = v
	}
	if f.noInherit {
		no := false
		req.InheritEnv = &no
	} else {
		req.Environ = os.Environ()
	}
	if f.fs != nil && f.fs.Changed("checkpoint") {
		c := f.checkpoint
		req.Checkpoint = &c
	}
	if f.fs != nil && f.fs.Changed("tty") {
		tty := f.tty
		req.TTY = &tty
	}
	for _, d := range []struct {
		flag, v  string
		positive bool
	}{
		{"--timeout", req.Timeout, true}, {"--warn-before", req.WarnBefore, false},
		{"--stop-grace", req.StopGrace, false}, {"--idle-timeout", req.IdleTimeout, true},
	} {
		if d.v == "" {
			continue
		}
		x, err := config.ParseDuration(d.v)
		switch {
		case err != nil:
			return req, fmt.Errorf("%s: %v", d.flag, err)
		case d.positive && x.Duration <= 0:
			return req, fmt.Errorf("%s %q: want a positive duration such as 30m or 4h", d.flag, d.v)
		case x.Duration < 0:
			return req, fmt.Errorf("%s %q: want a duration of 0 or more", d.flag, d.v)
		}
	}
	for _, s := range []struct{ flag, v string }{{"--warn-signal", req.WarnSignal}, {"--stop-signal", req.StopSignal}} {
		sig, err := config.ParseSignal(s.v)
		if err == nil && s.flag == "--warn-signal" {
			err = config.CheckWarnSignal(sig)
		}
		if err != nil {
			return req, fmt.Errorf("%s: %v", s.flag, err)
		}
	}
	if f.noAgent {
		if req.Agent != "" && req.Agent != config.AgentNone {
			return req, fmt.Errorf("--no-agent-integration and --agent %s: choose one", req.Agent)
		}
		req.Agent = config.AgentNone
	}
	if err := checkResume(req.Resume); err != nil {
		return req, err
	}
	if req.MaxTokens < 0 {
		return req, fmt.Errorf("--max-tokens %d: want 0 or more", req.MaxTokens)
	}
	if err := f.queueing(&req); err != nil {
		return req, err
	}
	if req.MaxCostUSD < 0 || req.MaxCostUSD != req.MaxCostUSD {
		return req, fmt.Errorf("--max-cost-usd %v: want 0 or more", req.MaxCostUSD)
	}
	if req.WaitingTimeout != "" {
		if x, err := config.ParseDuration(req.WaitingTimeout); err != nil || x.Duration <= 0 {
			return req, fmt.Errorf("--waiting-timeout %q: want a positive duration such as 10m", req.WaitingTimeout)
		}
	}
	switch req.Restart {
	case "", config.RestartNo, config.RestartOnFailure, config.RestartAlways:
	default:
		return req, fmt.Errorf("--restart %q: want no, on-failure or always", req.Restart)
	}
	if strings.ContainsRune(req.OnWarning, 0) {
		return req, fmt.Errorf("--on-warning: the command contains a NUL byte")
	}
	if err := f.worktreeRequest(&req); err != nil {
		return req, err
	}
	if _, err := req.LimitsOver(config.Limits{}); err != nil {
		var fe *config.FieldError
		if errors.As(err, &fe) {
			return req, fmt.Errorf("--%s: %s", strings.ReplaceAll(fe.Key, "_", "-"), fe.Msg)
		}
		return req, err
	}
	return req, nil
}

// checkResume checks a --resume value is one line of text: a conversation
// id, a session, or a directory (which the CLI makes absolute).
func checkResume(v string) error {
	if strings.ContainsAny(v, "\x00\n\r") || len(v) > 4096 {
		return fmt.Errorf("--resume: not a conversation id, session or directory")
	}
	return nil
}

// queueing fills in the flags of limits and the queue.
func (f *Flags) queueing(req *ipc.StartRequest) error {
	switch req.OnLimit {
	case "", config.OnLimitWait, config.OnLimitStop, config.OnLimitIgnore:
	default:
		return fmt.Errorf("--on-limit %q: want wait, stop or ignore", req.OnLimit)
	}
	if req.StallTimeout != "" {
		if d, err := config.ParseDuration(req.StallTimeout); err != nil || d.Duration <= 0 {
			return fmt.Errorf("--stall-timeout %q: want a positive duration such as 10m", req.StallTimeout)
		}
	}
	if err := config.CheckPoolName(req.Pool); err != nil {
		return fmt.Errorf("--pool: %v", err)
	}
	if f.fs != nil && f.fs.Changed("priority") {
		if f.priority < -1000 || f.priority > 1000 {
			return fmt.Errorf("--priority %d: want -1000 to 1000", f.priority)
		}
		p := f.priority
		req.Priority = &p
	}
	switch {
	case f.queue && f.noQueue:
		return errors.New("--queue and --no-queue: choose one")
	case f.noQueue:
		no := false
		req.Queue = &no
	case f.queue:
		yes := true
		req.Queue = &yes
	}
	if f.afterAny != "" {
		if req.After != "" {
			return errors.New("--after and --after-any: choose one")
		}
		req.After, req.AfterAny = f.afterAny, true
	}
	if req.After != "" && f.noQueue {
		return errors.New("--after waits in the queue: it cannot go with --no-queue")
	}
	return nil
}
