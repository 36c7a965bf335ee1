package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/daemon"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/packaging/manpage"
)

// version is stamped at link time (-X main.version=...).
var version = "dev"

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func run(args []string) int {
	if isHolderMode(args) {
		return runHolder()
	}
	if isLogKeeperMode(args) {
		return runLogKeeper(args[2])
	}
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		// The command said all it had to; only the exit code is left.
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "sessiond:", err)
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "sessiond",
		Short:         "Supervisor for long-running AI coding-agent sessions",
		Long:          "sessiond supervises long-running coding-agent sessions: deadlines with a warning, checkpoints, project watching, and a handoff for the next session whenever one ends.\nIt is driven by sessionctl over a Unix socket.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// An unknown flag or a bad flag value is a usage error, exit 2, in
	// every command (cobra asks the root for its children).
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{2, err} })
	root.AddCommand(newRunCmd(), newExecCmd(), newConfigCmd(), newVersionCmd(), newHolderCmd(), newDoctorCmd(), newTokenCmd())
	root.AddCommand(newServiceCmds()...)
	root.AddCommand(manpage.Command(version))
	return root
}

type runFlags struct {
	config, stateDir, socket, logLevel string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon in the foreground",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDaemon(cmd.Context(), f)
		},
	}
	cmd.Flags().StringVar(&f.config, "config", "", "config file (default $SESSIOND_CONFIG, else "+config.DefaultConfigPath()+")")
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "state directory (default $SESSIOND_STATE_DIR, else the config's, else the mode's default)")
	cmd.Flags().StringVar(&f.socket, "socket", "", "socket path (default $SESSIOND_SOCKET, else the config's, else the mode's default)")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (default the config's)")
	return cmd
}

// loadConfig reads the config file (or the embedded defaults) and applies
// the environment and flags on top.
func loadConfig(f runFlags) (*config.Config, error) {
	// Only the default path may be missing (the embedded defaults apply);
	// a file named by --config or SESSIOND_CONFIG must exist.
	path, explicit := f.config, f.config != "" || os.Getenv(config.EnvConfig) != ""
	if path == "" {
		path = config.DefaultConfigPath()
	}
	cfg, found, err := configfile.Load(path)
	if err != nil {
		return nil, &exitError{1, err}
	}
	if !found && explicit {
		return nil, &exitError{1, fmt.Errorf("config file %s does not exist", path)}
	}
	if v := os.Getenv(config.EnvStateDir); v != "" {
		cfg.StateDir = v
	}
	if v := os.Getenv(config.EnvSocket); v != "" {
		cfg.Socket = v
	}
	if f.stateDir != "" {
		cfg.StateDir = f.stateDir
	}
	if f.socket != "" {
		cfg.Socket = f.socket
	}
	if f.logLevel != "" {
		cfg.LogLevel = f.logLevel
	}
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	if err := ipc.CheckSocketPath(cfg.Socket); err != nil {
		return nil, &exitError{2, err}
	}
	return cfg, nil
}

func runDaemon(ctx context.Context, f runFlags) error {
	cfg, err := loadConfig(f)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.LogLevel, cfg.LogFormat, os.Stderr)
	if err != nil {
		return &exitError{2, err}
	}
	defer func() { _ = log.Sync() }()

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	hurry := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	// Under nohup (SIGHUP ignored), the sessions' commands start with
	// SIGHUP at its default all the same.
	proc.DefaultSignalsForChildren()
	defer signal.Stop(sigs)
	go func() {
		s := <-sigs
		log.Info("received signal, shutting down", zap.String("signal", s.String()))
		stop()
		if _, ok := <-sigs; ok {
			close(hurry)
		}
	}()

	if os.Getenv("GOGC") == "" {
		// A long-running daemon with a small, steady heap: trade a little
		// GC work for a smaller footprint.
		debug.SetGCPercent(50)
	}
	d, err := daemon.New(daemon.Options{Config: cfg, Log: log, Version: version, Ready: notifyReady, Executable: selfExecutable()})
	if err != nil {
		return err
	}
	return d.Run(ctx, hurry)
}

// selfExecutable is this sessiond binary, which the daemon runs as its
// log keeper; "" (no keeper) when it cannot be found.
func selfExecutable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

// newLogger builds the daemon's logger: console encoding on a terminal,
// JSON otherwise, unless format says which.
func newLogger(level, format string, w *os.File) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	if format == "" {
		format = "json"
		if term.IsTerminal(int(w.Fd())) {
			format = "console"
		}
	}
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if format == "console" {
		ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	} else {
		enc = zapcore.NewJSONEncoder(ec)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(w), lvl)), nil
}

// notifyReady tells systemd (Type=notify) that the socket answers.
func notifyReady() {
	if err := sdNotify("READY=1"); err != nil {
		fmt.Fprintln(os.Stderr, "sessiond: notify systemd:", err)
	}
}

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Check or print the daemon configuration"}
	var path, project string
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate the config and print the effective configuration",
		Long: "Validate the config and print the effective configuration. Notification rules are checked beyond\n" +
			"their syntax: commands found, secrets readable, notify-send installed. --project DIR checks that\n" +
			"project's sessiond.toml too.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return checkConfig(cmd.OutOrStdout(), cmd.ErrOrStderr(), path, project)
		},
	}
	check.Flags().StringVar(&path, "config", "", "config file (default $SESSIOND_CONFIG, else "+config.DefaultConfigPath()+")")
	check.Flags().StringVar(&project, "project", "", "also check this project's sessiond.toml")
	def := &cobra.Command{
		Use:   "default",
		Short: "Print the embedded default configuration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(configfile.DefaultTOML())
			return err
		},
	}
	cmd.AddCommand(check, def)
	return cmd
}

func printConfig(w io.Writer, cfg *config.Config) error {
	return toml.NewEncoder(w).Encode(cfg)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "sessiond", version)
		},
	}
}
