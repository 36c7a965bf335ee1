package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/ipc/startflags"
)

// execFlags are sessiond exec's own flags, beside the session's.
type execFlags struct {
	run             runFlags
	start           startflags.Flags
	deadlineFromEnv string
	quiet           bool
	json            bool
}

func newExecCmd() *cobra.Command {
	var f execFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] [DIR] [-- CMD ARGS...]",
		Short: "Run one session in the foreground (the entrypoint for containers and cluster jobs)",
		Long: `sessiond exec runs one session in the foreground, with the same spec, flags and
files as a daemon session: the deadline and its warning, checkpoints, the
watcher, preflight, sidecars, the handoff, the session state and the progress
log. It serves the API on a socket (sessionctl, and report/remaining from the
agent, work as with the daemon), copies the session's output to stdout, and
exits with the session's exit status once the handoff is on disk.

As PID 1 (a container's entrypoint) it reaps every zombie; SIGTERM, SIGINT,
SIGHUP and SIGQUIT stop the session gracefully (a second one kills it now;
the handoff is still written).

Exit status: the command's own; 128+N when a signal N killed it; 124 when the
deadline came, 121 idle, 122 budget spent, 123 waited too long for input;
75 when a usage limit stopped it (on_limit = "stop": retry later); 1 when it
could not start; 2 for a usage error.

The state dir defaults to $SESSIOND_STATE_DIR, else DIR/.sessiond/exec (on the
project's volume, so the next run finds it); the socket to $SESSIOND_SOCKET,
else one in $XDG_RUNTIME_DIR when that is private to the user, else in a
private directory of its own; the child is given it as SESSIOND_SOCKET.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd, args, &f)
		},
	}
	fs := cmd.Flags()
	f.start.Bind(fs)
	fs.StringVar(&f.run.config, "config", "", "daemon config file (default $SESSIOND_CONFIG, else "+config.DefaultConfigPath()+" if present)")
	fs.StringVar(&f.run.stateDir, "state-dir", "", "state directory (default $SESSIOND_STATE_DIR, else DIR/.sessiond/exec)")
	fs.StringVar(&f.run.socket, "socket", "", "socket to serve the API on (default $SESSIOND_SOCKET, else one in a private $XDG_RUNTIME_DIR or a private directory of its own)")
	fs.StringVar(&f.run.logLevel, "log-level", "warn", "debug, info, warn or error")
	fs.StringVar(&f.deadlineFromEnv, "deadline-from-env", "", "name of an environment variable holding the scheduler's deadline, if set: seconds from now (activeDeadlineSeconds), a duration, or an RFC 3339 time")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "do not copy the session's output to stdout")
	fs.BoolVar(&f.json, "json", false, "print the final session record as JSON on stdout")
	return cmd
}

// deadlineMargin is how long before the scheduler's deadline the session's
// own deadline comes, so that it ends as a timeout, with its handoff, rather
// than by the scheduler's signal.
const deadlineMargin = 5 * time.Second

func runExec(cmd *cobra.Command, args []string, f *execFlags) error {
	dir, command, err := execArgs(cmd, args)
	if err != nil {
		return err
	}
	req, err := f.start.Request(dir, command)
	if err != nil {
		return &exitError{2, err}
	}
	if f.deadlineFromEnv != "" && os.Getenv(f.deadlineFromEnv) != "" {
		left, err := schedulerDeadline(f.deadlineFromEnv, time.Now())
		if err != nil {
			return &exitError{2, err}
		}
		left -= deadlineMargin
		if left <= 0 {
			return &exitError{2, fmt.Errorf("--deadline-from-env %s leaves no time to run", f.deadlineFromEnv)}
		}
		if req.Timeout == "" || shorter(left, req.Timeout) {
			req.Timeout = left.Round(time.Second).String()
			// The scheduler's wall: no wait for a limit moves it.
			req.HardDeadline = true
		}
	}
	if f.run.stateDir == "" && os.Getenv(config.EnvStateDir) == "" {
		// Made as .sessiond is: no symlink in its place is followed.
		p, err := state.OpenProject(dir, nil)
		if err == nil {
			f.run.stateDir, err = p.EnsureSubdir("exec")
		}
		if err != nil {
			return &exitError{1, fmt.Errorf("state dir of %s: %w", dir, err)}
		}
		// The state dir is in the project, which a container's volume
		// may keep and share: the caller's environment, kept for a
		// restart of a session by a later daemon (there is none), goes
		// with this one.
		defer func() {
			if err := daemon.ForgetEnvirons(f.run.stateDir); err != nil {
				fmt.Fprintln(os.Stderr, "sessiond: warning: the sessions' kept environments:", err)
			}
		}()
	}
	if f.run.socket == "" && os.Getenv(config.EnvSocket) == "" {
		sock, cleanup, err := execSocket(dir)
		if err != nil {
			return &exitError{1, err}
		}
		defer cleanup()
		f.run.socket = sock
	}
	cfg, err := loadConfig(f.run)
	if err != nil {
		return err
	}
	// The one session is stopped with the container: never left running.
	cfg.OnShutdown = config.ShutdownStop
	log, err := newLogger(cfg.LogLevel, cfg.LogFormat, os.Stderr)
	if err != nil {
		return &exitError{2, err}
	}
	defer func() { _ = log.Sync() }()

	// Signals from the container runtime or the scheduler stop the session
	// gracefully; a second one kills it now. Either way its end is written.
	// They are caught from here on: one that comes while the session starts
	// stops it once it runs, rather than killing sessiond before any
	// handoff (as PID 1, an uncaught SIGTERM would end it with status 2).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	ready := make(chan struct{})
	d, err := daemon.New(daemon.Options{Config: cfg, Log: log, Version: version, Ready: func() { close(ready) }, Executable: selfExecutable()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx, nil) }()
	select {
	case <-ready:
	case err := <-ran:
		return err
	}
	self := ipc.Caller{UID: os.Geteuid(), GID: os.Getegid(), PID: os.Getpid()}
	resp, err := d.Sessions().StartSession(ctx, self, req)
	if err != nil {
		cancel()
		<-ran
		return err
	}
	if resp.Summary != "" {
		fmt.Fprint(os.Stderr, resp.Summary)
	}
	for _, n := range resp.Notices {
		fmt.Fprintln(os.Stderr, "sessiond: warning:", n)
	}
	id := resp.Session.ID
	log.Info("session started", zap.String("session", id), zap.String("socket", cfg.Socket))

	go func() {
		grace := ""
		for range sigs {
			go func(grace string) { _, _ = d.Sessions().StopSession(ctx, self, id, ipc.StopRequest{Grace: grace}) }(grace)
			grace = "0s"
		}
	}()
	followDone := make(chan struct{})
	if !f.quiet {
		go func() {
			defer close(followDone)
			// The session's own output, to its own user: as it is, but a
			// terminal session's when it goes elsewhere than a terminal (a
			// container's log), which gets it as text.
			raw := !resp.Session.TTY || term.IsTerminal(int(os.Stdout.Fd()))
			_ = d.Logs().SessionLogs(ctx, self, id, ipc.LogOptions{Follow: true, Raw: raw}, os.Stdout)
		}()
	} else {
		close(followDone)
	}

	final, err := d.Sessions().Follow(ctx, self, id)
	if err != nil {
		cancel()
		<-ran
		return err
	}
	<-followDone
	cancel()
	if err := <-ran; err != nil {
		log.Warn("daemon", zap.Error(err))
	}
	fmt.Fprintln(os.Stderr, execSummary(final))
	if f.json {
		b, _ := json.MarshalIndent(final, "", "  ")
		fmt.Fprintf(os.Stdout, "%s\n", b)
	}
	if code := ipc.ExitStatus(final); code != 0 {
		return &exitError{code, nil}
	}
	return nil
}

// execSocket is the default socket of sessiond exec: in $XDG_RUNTIME_DIR
// when it is a private directory of this user's, else in a private
// directory of a random name made now (removed by cleanup): never at a
// predictable name where another user could make it first.
func execSocket(dir string) (sock string, cleanup func(), err error) {
	name := "sessiond-exec-" + ipc.ProjectID(dir) + ".sock"
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		if fi, err := os.Lstat(rt); err == nil && fi.IsDir() && fi.Mode().Perm()&0o077 == 0 {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Geteuid() {
				return filepath.Join(rt, name), func() {}, nil
			}
		}
	}
	priv, err := os.MkdirTemp("", "sessiond-exec-")
	if err != nil {
		return "", nil, fmt.Errorf("make a private directory for the socket: %w", err)
	}
	return filepath.Join(priv, name), func() { _ = os.RemoveAll(priv) }, nil
}

// execArgs splits `[DIR] [-- CMD ARGS...]` and resolves DIR.
func execArgs(cmd *cobra.Command, args []string) (string, []string, error) {
	pos, command := args, []string(nil)
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		pos, command = args[:dash], args[dash:]
		if len(command) == 0 {
			return "", nil, &exitError{2, errors.New("no command after --")}
		}
	}
	if len(pos) > 1 {
		return "", nil, &exitError{2, fmt.Errorf("exec takes one DIR, got %d arguments (put the command after --)", len(pos))}
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", nil, &exitError{2, fmt.Errorf("project directory %s: %w", dir, err)}
	}
	return abs, command, nil
}

// schedulerDeadline reads the time left before the scheduler's deadline
// from the environment variable name: whole seconds from now (as a
// manifest sets it from activeDeadlineSeconds), a duration ("2h"), or an
// RFC 3339 time.
func schedulerDeadline(name string, now time.Time) (time.Duration, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return 0, fmt.Errorf("--deadline-from-env %s: the variable is not set", name)
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.Sub(now), nil
	}
	return 0, fmt.Errorf("--deadline-from-env %s=%q: want seconds, a duration such as 2h, or an RFC 3339 time", name, v)
}

// shorter reports whether d is shorter than the duration text s.
func shorter(d time.Duration, s string) bool {
	x, err := config.ParseDuration(s)
	return err == nil && d < x.Duration
}

// execSummary is the one line a scheduler's log collector keeps: how the
// session ended, after how long, its last checkpoint and its handoff.
func execSummary(r *ipc.Session) string {
	end := r.EndReason
	if r.State == ipc.StateFailed {
		end = "failed: " + r.Error
	}
	took := ""
	if r.EndedAt != nil {
		took = " after " + r.EndedAt.Sub(r.StartedAt).Round(time.Second).String()
	}
	line := fmt.Sprintf("sessiond: session %s ended %s%s (exit %d)", r.ID, end, took, ipc.ExitStatus(r))
	if r.LastCheckpoint != "" {
		line += fmt.Sprintf("; checkpoint %.12s", r.LastCheckpoint)
	}
	if r.HandoffPath != "" {
		line += "; handoff " + r.HandoffPath
	}
	if a := r.Agent; a != nil && a.Limit != nil && r.EndReason == ipc.EndLimit {
		line += "; usage limit " + a.Limit.Words(time.Now())
		if !a.Limit.ResetsAt.IsZero() {
			line += ": run again after " + a.Limit.ResetsAt.Format(time.RFC3339)
		}
	}
	return line
}
