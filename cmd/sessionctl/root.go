package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/packaging/manpage"
)

// version is stamped at link time (-X main.version=...).
var version = "dev"

// Exit codes (DESIGN §5.2).
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnreachable = 3
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

// app is the state shared by the commands of one invocation.
type app struct {
	socket  string
	host    string
	context string
	json    bool
	noColor bool
	out     io.Writer
	errOut  io.Writer
	client  *ipc.Client
}

func run(args []string, stdout, stderr io.Writer) int {
	a := &app{out: stdout, errOut: stderr}
	root := a.newRootFor(args)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	delay := catchLate
	if catchNow[commandWord(args)] {
		delay = 0
	}
	ctx := interruptibleAfter(delay)
	defer ctx.stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	return a.report(err)
}

// report prints err as one line a user can act on and returns the exit code.
func (a *app) report(err error) int {
	var ee *exitError
	if errors.As(err, &ee) && ee.code == exitOK {
		return exitOK
	}
	if errors.Is(err, errQuiet) && ee != nil {
		return ee.code // told already, on stderr
	}
	var un *ipc.UnreachableError
	if errors.As(err, &un) && un.Remote {
		fmt.Fprintf(a.errOut, "sessionctl: cannot reach sessiond on %s: %s\n", un.Socket, un.Err)
		return exitUnreachable
	}
	if errors.As(err, &un) {
		fmt.Fprintf(a.errOut, "sessionctl: sessiond is not running (nothing answers on %s: %v).\nStart it with `sessiond run` (or `sessiond start` for the installed service), or point --socket / SESSIOND_SOCKET at its socket.\n", un.Socket, un.Err)
		return exitUnreachable
	}
	var ae *ipc.Error
	if errors.As(err, &ae) {
		fmt.Fprintf(a.errOut, "sessionctl: %s\n", ipc.TerminalLine(ae.Message))
		for _, c := range ae.Candidates {
			fmt.Fprintf(a.errOut, "  %s\n", c)
		}
		if errors.As(err, &ee) {
			return ee.code
		}
		return exitFailed
	}
	fmt.Fprintf(a.errOut, "sessionctl: %v\n", err)
	if errors.As(err, &ee) {
		return ee.code
	}
	if strings.Contains(err.Error(), "unknown flag") || strings.Contains(err.Error(), "unknown command") ||
		strings.Contains(err.Error(), "accepts") || strings.Contains(err.Error(), "requires") || strings.Contains(err.Error(), "invalid argument") {
		return exitUsage
	}
	return exitFailed
}

// newRoot is the whole command tree.
func (a *app) newRoot() *cobra.Command {
	root := a.bareRoot()
	for _, c := range commands {
		root.AddCommand(c.make(a))
	}
	root.AddCommand(manpage.Command(version))
	return root
}

// bareRoot is the root command, its global flags and no command.
func (a *app) bareRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "sessionctl",
		Short: "Control sessiond: start, watch and stop supervised agent sessions",
		Long: `sessionctl talks to sessiond over its Unix socket.

Session ids accept any unique prefix; a DIR argument means the live (or
latest) session of that project.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if a.socket == "" {
				a.socket = config.ClientSocket()
			}
			if os.Getenv("NO_COLOR") != "" {
				a.noColor = true
			}
			if err := ipc.CheckSocketPath(a.socket); err != nil {
				return &exitError{exitUsage, err}
			}
			a.client = &ipc.Client{Socket: a.socket}
			if err := a.useHost(cmd); err != nil {
				return err
			}
			var warned sync.Once
			a.client.OnWarning = func(w string) {
				warned.Do(func() { fmt.Fprintf(a.errOut, "sessionctl: warning: sessiond: %s\n", ipc.TerminalLine(w)) })
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{exitUsage, err} })
	root.PersistentFlags().StringVar(&a.socket, "socket", "", "daemon socket (default $SESSIOND_SOCKET, else the user's, else the system's)")
	root.PersistentFlags().StringVarP(&a.host, "host", "H", "", "the daemon of another host: ssh://[user@]host[:port] (default $SESSIOND_HOST; see sessionctl context)")
	root.PersistentFlags().StringVar(&a.context, "context", "", "the context to talk to (default $SESSIOND_CONTEXT, else the current one: sessionctl context ls)")
	root.PersistentFlags().BoolVar(&a.json, "json", false, "machine-readable JSON output")
	root.PersistentFlags().BoolVar(&a.noColor, "no-color", false, "no colour in output (also NO_COLOR)")
	return root
}

// commands are sessionctl's commands, by name (TestCommandTable keeps the
// names true). The man page is not among them: it is made from the whole
// tree.
var commands = []struct {
	name string
	make func(*app) *cobra.Command
}{
	{"start", (*app).startCmd}, {"ps", (*app).psCmd}, {"stop", (*app).stopCmd}, {"kill", (*app).killCmd},
	{"logs", (*app).logsCmd}, {"inspect", (*app).inspectCmd}, {"extend", (*app).extendCmd},
	{"remaining", (*app).remainingCmd}, {"hook", (*app).hookCmd}, {"mcp", (*app).mcpCmd},
	{"events", (*app).eventsCmd}, {"version", (*app).versionCmd}, {"checkpoint", (*app).checkpointCmd},
	{"checkpoints", (*app).checkpointsCmd}, {"restore", (*app).restoreCmd}, {"handoff", (*app).handoffCmd},
	{"state", (*app).stateCmd}, {"clear-session", (*app).clearSessionCmd}, {"report", (*app).reportCmd},
	{"restart", (*app).restartCmd}, {"rm", (*app).rmCmd}, {"prune", (*app).pruneCmd},
	{"notify", (*app).notifyCmd}, {"worktrees", (*app).worktreesCmd}, {"worktree", (*app).worktreeCmd},
	{"queue", (*app).queueCmd}, {"attach", (*app).attachCmd}, {"screen", (*app).screenCmd},
	{"send", (*app).sendCmd}, {"ui", (*app).uiCmd}, {"dial-stdio", (*app).dialStdioCmd},
	{"context", (*app).contextCmd},
}

// newRootFor is the command tree for args: when they name one of commands,
// the root with that command alone, for every command's flags and help
// text cost each run its start-up (allocations, and the page faults of
// code that never runs); else (help, completion, a mistyped command and
// its suggestions, the man page) the whole tree.
func (a *app) newRootFor(args []string) *cobra.Command {
	name := commandWord(args)
	for _, c := range commands {
		if c.name == name {
			root := a.bareRoot()
			// Completion and help are words of their own, which take
			// the whole tree: cobra need not make either for this one.
			root.CompletionOptions.DisableDefaultCmd = true
			root.SetHelpCommand(&cobra.Command{Use: "help", Hidden: true})
			root.AddCommand(c.make(a))
			return root
		}
	}
	return a.newRoot()
}

// commandWord is the first argument that is not a global flag or its
// value: the command's name, or "" for none.
func commandWord(args []string) string {
	for i := 0; i < len(args); i++ {
		switch arg := args[i]; {
		case arg == "--":
			return ""
		case arg == "--socket" || arg == "--host" || arg == "-H" || arg == "--context":
			i++ // its value
		case strings.HasPrefix(arg, "-"):
		default:
			return arg
		}
	}
	return ""
}

// isDirArg reports whether an ID|DIR argument names a directory.
func isDirArg(arg string) bool {
	if remote != nil {
		return strings.HasPrefix(arg, "/")
	}
	if arg == "." || arg == ".." || strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, "./") || strings.HasPrefix(arg, "../") {
		return true
	}
	fi, err := os.Stat(arg)
	if err == nil && fi.IsDir() {
		return true
	}
	// USER/NAME names a session of USER's; another path is a directory
	// (and an error, when it is not one).
	owner, name, ok := strings.Cut(arg, "/")
	return ok && (ipc.CheckName(name) != nil || strings.ContainsRune(name, '/') || owner == "")
}

// absDir resolves a DIR argument as the daemon will see it.
func absDir(arg string) (string, error) {
	if remote != nil {
		return remoteDir(arg)
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return "", err
	}
	res, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", &exitError{exitFailed, fmt.Errorf("directory %s does not exist", arg)}
		}
		return "", err
	}
	fi, err := os.Stat(res)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", &exitError{exitFailed, fmt.Errorf("%s is not a directory", arg)}
	}
	return res, nil
}

// resolve turns an ID|DIR argument into a session id: a DIR means the
// project's live session, else its latest.
func (a *app) resolve(ctx context.Context, arg string) (string, error) {
	if !isDirArg(arg) {
		return arg, nil
	}
	dir, err := absDir(arg)
	if err != nil {
		return "", err
	}
	list, err := a.client.Sessions(ctx, ipc.ListOptions{All: true, Project: dir})
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", &exitError{exitFailed, &noSessionError{dir}}
	}
	for i := len(list) - 1; i >= 0; i-- {
		if ipc.Live(list[i].State) {
			return list[i].ID, nil
		}
	}
	return list[len(list)-1].ID, nil
}

// noSessionError is resolve's answer for a project the daemon keeps no
// session of (none ran, or rm and prune removed them).
type noSessionError struct{ dir string }

func (e *noSessionError) Error() string { return "no session has run in " + e.dir }

// sessionFromEnv is the session sessionctl runs inside, for report,
// remaining and the agent hook.
// argOrHere is a command's one ID|DIR argument, "." (the project in the
// working directory) when none is given.
func argOrHere(args []string) string {
	if len(args) == 0 {
		return "."
	}
	return args[0]
}

func sessionFromEnv() (string, error) {
	id := os.Getenv("SESSIOND_SESSION_ID")
	if id == "" {
		return "", &exitError{exitUsage, errors.New("SESSIOND_SESSION_ID is not set: run this from inside a session started by sessiond, or give the session id")}
	}
	return id, nil
}
