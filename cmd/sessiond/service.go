package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kardianos/service"
	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/daemon/state"
)

// LSB exit codes of `status` (LSB init script actions).
const (
	statusRunning    = 0
	statusNotRunning = 3
	statusUnknown    = 4
)

// serviceState is what the service manager says of sessiond's service.
type serviceState struct {
	Installed bool   // the manager has a definition of it
	Path      string // the definition it loaded
	Running   bool
	Detail    string // "failed", "starting", "stopping", "masked", or ""
	PID       int
	Enabled   string // systemd's unit file state, when it has one
}

// hints are the words and commands the output suggests for a service kind.
type hints struct {
	kind    string // "system service (systemd)"
	control string // "sudo sessiond %s": fill in a verb
	logs    string
	enabled string // what being enabled means
}

func (h hints) cmd(verb string) string { return fmt.Sprintf(h.control, verb) }

// notDone opens the message of a service command that could not act.
func notDone(verb string) string {
	switch verb {
	case "status":
		return "status unknown: "
	case "install":
		return "nothing installed: "
	}
	return verb + ": nothing done: "
}

// controlOnly satisfies service.Interface for install and control: the
// service manager runs `sessiond run` itself.
type controlOnly struct{}

func (controlOnly) Start(service.Service) error { return nil }
func (controlOnly) Stop(service.Service) error  { return nil }

type serviceFlags struct {
	user, force bool
	config      string
}

// newKardianos returns kardianos/service's handle on sessiond's service,
// which writes content (the rendered unit or job) when it installs.
func newKardianos(f *serviceFlags, exe string, args []string, opt service.KeyValue) (service.Service, error) {
	if opt == nil {
		opt = service.KeyValue{"UserService": f.user}
	}
	s, err := service.New(controlOnly{}, &service.Config{
		Name:        "sessiond",
		DisplayName: "sessiond",
		Description: "sessiond: supervisor for long-running AI coding-agent sessions",
		Executable:  exe,
		Arguments:   args,
		Option:      opt,
	})
	if err != nil {
		return nil, fmt.Errorf("service manager: %w", err)
	}
	return s, nil
}

func newServiceCmds() []*cobra.Command {
	f := &serviceFlags{}
	control := func(use, short string, needRoot bool, do func(cmd *cobra.Command, f *serviceFlags) error) *cobra.Command {
		cmd := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if err := serviceHostCheck(use, f.user); err != nil {
					code := 1
					if use == "status" {
						code = statusUnknown
					}
					return &exitError{code, err}
				}
				if needRoot && !f.user && os.Geteuid() != 0 {
					return &exitError{1, errors.New("the system service needs root: run with sudo, or use --user for a user service")}
				}
				return do(cmd, f)
			},
		}
		cmd.Flags().BoolVar(&f.user, "user", false, "the user service (systemd --user, launchd agent) instead of the system one")
		return cmd
	}
	install := control("install", "Install sessiond as a service (systemd unit; launchd job on macOS), enabled but not started", true, runInstall)
	install.Flags().StringVar(&f.config, "config", "", "config file the service runs with (default: the mode's, "+config.SystemConfig+" for the system service)")
	install.Flags().BoolVar(&f.force, "force", false, "install an executable from a temporary or build directory, or over a unit a package provides")
	return []*cobra.Command{
		install,
		control("uninstall", "Stop the service and remove every file install wrote", true, runUninstall),
		control("start", "Start the service", true, func(cmd *cobra.Command, f *serviceFlags) error { return runControl(cmd, f, "start") }),
		control("stop", "Stop the service (sessions end as on_shutdown says)", true, func(cmd *cobra.Command, f *serviceFlags) error { return runControl(cmd, f, "stop") }),
		control("restart", "Restart the service", true, func(cmd *cobra.Command, f *serviceFlags) error { return runControl(cmd, f, "restart") }),
		control("status", "Print whether the service runs, with its unit, pid, socket, state dir and version (exit 0 running, 3 stopped, 4 not installed)", false, runStatus),
	}
}

func runInstall(cmd *cobra.Command, f *serviceFlags) error {
	out := cmd.OutOrStdout()
	h := serviceHints(f.user)
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("find this executable: %w", err)
	}
	if why := unstableLocation(exe); why != "" && !f.force {
		sudo := "sudo "
		if os.Geteuid() == 0 {
			sudo = ""
		}
		userFlag := ""
		if f.user {
			userFlag = " --user"
		}
		return &exitError{1, fmt.Errorf("refusing to install %s: it is %s, and the service would break when that is cleaned up or rebuilt.\n"+
			"Nothing was written. Install the binaries somewhere stable first, then install from there:\n"+
			"  %sinstall -m 0755 %s %s /usr/local/bin/\n"+
			"  %s/usr/local/bin/sessiond install%s\n"+
			"or pass --force to install it from where it is",
			exe, why, sudo, shellQuote(exe), shellQuote(filepath.Join(filepath.Dir(exe), "sessionctl")), sudo, userFlag)}
	}
	args := []string{"run"}
	if f.config != "" {
		abs, err := filepath.Abs(f.config)
		if err != nil {
			return err
		}
		// The service would fail at every start: say so now.
		if _, found, err := configfile.Load(abs); err != nil {
			return &exitError{1, fmt.Errorf("%w\nNothing was written", err)}
		} else if !found {
			return &exitError{1, fmt.Errorf("config file %s does not exist. Nothing was written", abs)}
		}
		args = append(args, "--config", abs)
	}
	path, links, err := serviceFiles(f.user)
	if err != nil {
		return err
	}
	content, opt, err := serviceContent(f.user, exe, args)
	if err != nil {
		return &exitError{1, fmt.Errorf("%w. Nothing was written", err)}
	}
	if vendor := serviceVendorPath(f.user); vendor != "" && !f.force {
		fmt.Fprintf(out, "sessiond is already installed: %s\nNothing was written.\n%s\n(`sessiond install --force` would write %s, which takes precedence over it.)\n",
			vendor, vendorAdvice(f.user, vendor), path)
		return nil
	}

	// A manager that does not answer would refuse the unit after it is
	// written: ask it first.
	if _, err := serviceQuery(f.user); err != nil {
		return &exitError{1, fmt.Errorf("%w\nNothing was written", err)}
	}
	old, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the installed unit: %w", err)
	}
	if existed && string(old) == string(content) {
		fmt.Fprintf(out, "sessiond is already installed as the %s: %s is up to date. Nothing was written.\n", h.kind, path)
		return nil
	}
	before := map[string]bool{}
	for _, l := range links {
		before[l] = exists(l)
	}
	s, err := newKardianos(f, exe, args, opt)
	if err != nil {
		return err
	}
	wasRunning := false
	if existed {
		fmt.Fprintf(out, "sessiond is installed with a different definition; updating %s:\n", path)
		for _, c := range lineChanges(string(old), content) {
			fmt.Fprintf(out, "  %s\n", c)
		}
		if st, err := serviceQuery(f.user); err == nil {
			wasRunning = st.Running
		}
		if err := s.Uninstall(); err != nil {
			return fmt.Errorf("remove the old definition: %w", err)
		}
	}
	if err := s.Install(); err != nil {
		return installFailed(path, links, before, old, existed, err)
	}

	if !existed {
		fmt.Fprintf(out, "Installed the sessiond %s:\n", h.kind)
	}
	fmt.Fprintf(out, "  wrote   %s\n", path)
	for _, l := range links {
		if exists(l) && !before[l] {
			fmt.Fprintf(out, "  linked  %s (enabled: %s)\n", l, h.enabled)
		}
	}
	fmt.Fprintf(out, "  runs    %s\n", shellJoin(append([]string{exe}, args...)))
	if wasRunning {
		// launchd stops a job to replace it; systemd leaves it running.
		if now, err := serviceQuery(f.user); err == nil && !now.Running {
			fmt.Fprintf(out, "The service was stopped to replace its definition: `%s` starts it again.\n", h.cmd("start"))
			return nil
		}
		fmt.Fprintf(out, "The running service still runs the old definition: `%s` applies it (its sessions end as on_shutdown says).\n", h.cmd("restart"))
		return nil
	}
	fmt.Fprintf(out, "Next:\n  %-32s start it now\n  %-32s pid, socket, state dir, version\n  %-32s its log\n", h.cmd("start"), h.cmd("status"), h.logs)
	if f.user {
		fmt.Fprint(out, lingerHint())
	}
	return nil
}

// installFailed undoes what a failed install left behind — the unit it
// wrote before the manager refused to enable it — and says so.
func installFailed(path string, links []string, before map[string]bool, old []byte, existed bool, cause error) error {
	var undo []string
	for _, l := range links {
		if !before[l] && exists(l) {
			if err := os.Remove(l); err == nil {
				undo = append(undo, "removed "+l)
			}
		}
	}
	if existed {
		if err := state.WriteFile(path, old, 0o644); err == nil {
			undo = append(undo, "put the previous "+path+" back (no longer enabled)")
		}
	} else if exists(path) {
		if err := os.Remove(path); err == nil {
			undo = append(undo, "removed "+path)
		}
	}
	msg := fmt.Sprintf("install: %v", cause)
	if len(undo) > 0 {
		msg += "\nUndone: " + strings.Join(undo, "; ")
	}
	return &exitError{1, errors.New(msg)}
}

func runUninstall(cmd *cobra.Command, f *serviceFlags) error {
	out := cmd.OutOrStdout()
	h := serviceHints(f.user)
	path, links, err := serviceFiles(f.user)
	if err != nil {
		return err
	}
	if !exists(path) {
		if vendor := serviceVendorPath(f.user); vendor != "" {
			return &exitError{1, fmt.Errorf("%s was not written by `sessiond install`, which removes only what it wrote; nothing removed.\n"+
				"Remove the package that installed it (apt remove sessiond, dnf remove sessiond), or disable it: systemctl%s disable --now sessiond",
				vendor, map[bool]string{true: " --user"}[f.user])}
		}
		fmt.Fprintf(out, "sessiond is not installed as the %s (there is no %s). Nothing to remove.\n", h.kind, path)
		return nil
	}
	argv, _ := serviceCommandLine(path)
	rt := runtimeOf(f.user, argv)
	s, err := newKardianos(f, "", nil, nil)
	if err != nil {
		return err
	}
	if st, err := serviceQuery(f.user); err == nil && st.Running {
		if err := s.Stop(); err != nil {
			return fmt.Errorf("stop the service before removing it: %w", err)
		}
		fmt.Fprintln(out, "  stopped the service (its sessions ended as on_shutdown says)")
	}
	present := map[string]bool{}
	for _, l := range links {
		present[l] = exists(l)
	}
	if err := s.Uninstall(); err != nil && exists(path) {
		return fmt.Errorf("uninstall: %w", err)
	}
	var left []string
	for _, p := range append([]string{path}, links...) {
		switch {
		case exists(p):
			left = append(left, p)
		case p == path || present[p]:
			fmt.Fprintf(out, "  removed %s\n", p)
		}
	}
	removeEmptyDirs(f.user, path, links)
	if len(left) > 0 {
		return &exitError{1, fmt.Errorf("uninstall left %s behind", strings.Join(left, ", "))}
	}
	fmt.Fprintf(out, "Uninstalled the sessiond %s. Kept: the config %s and the state dir %s (session records and logs); delete them yourself if you no longer need them.\n",
		h.kind, rt.Config, rt.StateDir)
	return nil
}

// removeEmptyDirs removes the directories install made that uninstall
// left empty: a *.wants directory, and for a user unit the
// ~/.config/systemd/user directory kardianos/service creates. A system
// unit's directory is never removed (it is never left empty either).
func removeEmptyDirs(userMode bool, path string, links []string) {
	for _, l := range links {
		_ = os.Remove(filepath.Dir(l))
	}
	if userMode {
		// rmdir fails on a directory that holds anything.
		_ = os.Remove(filepath.Dir(path))
		_ = os.Remove(filepath.Dir(filepath.Dir(path)))
	}
}

func runControl(cmd *cobra.Command, f *serviceFlags, verb string) error {
	out := cmd.OutOrStdout()
	h := serviceHints(f.user)
	st, err := serviceQuery(f.user)
	if err != nil {
		return err
	}
	if !st.Installed {
		install := "sessiond install"
		if f.user {
			install += " --user"
		} else if os.Geteuid() != 0 {
			install = "sudo " + install
		}
		return &exitError{1, fmt.Errorf("sessiond is not installed as the %s: run `%s` first", h.kind, install)}
	}
	s, err := newKardianos(f, "", nil, nil)
	if err != nil {
		return err
	}
	switch verb {
	case "start":
		if st.Running {
			fmt.Fprintf(out, "sessiond is already running (pid %d)\n", st.PID)
			return nil
		}
		err = s.Start()
	case "stop":
		if !st.Running {
			fmt.Fprintln(out, "sessiond is not running")
			return nil
		}
		err = s.Stop()
	case "restart":
		err = s.Restart()
	}
	if err != nil {
		return &exitError{1, fmt.Errorf("%s: %w\nIts log says why: %s -n 50", verb, err, h.logs)}
	}
	now, err := serviceQuery(f.user)
	if err != nil {
		return err
	}
	switch {
	case verb == "stop" && !now.Running:
		fmt.Fprintln(out, "sessiond stopped")
	case verb != "stop" && now.Running:
		fmt.Fprintf(out, "sessiond %s (pid %d)\n", map[string]string{"start": "started", "restart": "restarted"}[verb], now.PID)
	default:
		return &exitError{1, fmt.Errorf("%s: the service is %s afterwards; its log says why: %s -n 50", verb, stateWord(now), h.logs)}
	}
	return nil
}

func stateWord(st serviceState) string {
	switch {
	case !st.Installed:
		return "not installed"
	case st.Running && st.Detail != "":
		return "running (" + st.Detail + ")"
	case st.Running:
		return "running"
	case st.Detail != "":
		return "stopped (" + st.Detail + ")"
	}
	return "stopped"
}

func runStatus(cmd *cobra.Command, f *serviceFlags) error {
	out := cmd.OutOrStdout()
	h := serviceHints(f.user)
	st, err := serviceQuery(f.user)
	if err != nil {
		return &exitError{statusUnknown, err}
	}
	path := st.Path
	if path == "" {
		path, _, _ = serviceFiles(f.user)
	}
	fmt.Fprintf(out, "sessiond %s: %s\n", h.kind, stateWord(st))
	if !st.Installed {
		install := "sessiond install"
		if f.user {
			install += " --user"
		} else if os.Geteuid() != 0 {
			install = "sudo " + install
		}
		fmt.Fprintf(out, "  %-10s %s (absent)\n  install it with: %s\n", "unit", path, install)
		return &exitError{statusUnknown, nil}
	}
	field := func(k, v string) { fmt.Fprintf(out, "  %-10s %s\n", k, v) }
	unit := path
	if st.Enabled != "" {
		unit += " (" + st.Enabled + ")"
	}
	field("unit", unit)
	argv, err := serviceCommandLine(path)
	if err != nil {
		field("runs", "unknown: "+err.Error())
	} else {
		field("runs", shellJoin(argv))
	}
	rt := runtimeOf(f.user, argv)
	if st.Running {
		field("pid", fmt.Sprint(st.PID))
	}
	field("config", rt.Config)
	if rt.Problem != "" {
		field("", "unreadable: "+rt.Problem)
	}
	if st.Running {
		v, err := askDaemon(cmd.Context(), rt.Socket)
		if err == nil && v.Socket != "" {
			rt.Socket = v.Socket
		}
		if err == nil && v.StateDir != "" {
			rt.StateDir = v.StateDir
		}
		field("socket", rt.Socket)
		field("state dir", rt.StateDir)
		if err != nil {
			field("version", "unknown: "+err.Error())
		} else {
			field("version", v.Version)
		}
		if c := v.Containment; c != nil {
			if c.Mode == "none" {
				field("contained", "no: "+c.Why+" (sessiond doctor)")
			} else {
				field("contained", c.Mode+", in "+c.Path+" ("+describeControllers(c.Controllers)+")")
			}
		}
		if v.Warning != "" {
			field("warning", v.Warning)
		}
		return nil
	}
	field("socket", rt.Socket)
	field("state dir", rt.StateDir)
	fmt.Fprintf(out, "  start it with: %s", h.cmd("start"))
	if st.Detail == "failed" {
		fmt.Fprintf(out, " (it failed: %s -n 50 says why)", h.logs)
	}
	fmt.Fprintln(out)
	return &exitError{statusNotRunning, nil}
}

// lineChanges lists the lines of old that new lacks ("- ...") and those it
// adds ("+ ..."), in order: enough to see what an update changes in a unit.
func lineChanges(old, new string) []string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	inOld, inNew := count(old), count(new)
	var out []string
	for _, l := range strings.Split(old, "\n") {
		if inNew[l] > 0 {
			inNew[l]--
			continue
		}
		out = append(out, "- "+l)
	}
	for _, l := range strings.Split(new, "\n") {
		if inOld[l] > 0 {
			inOld[l]--
			continue
		}
		out = append(out, "+ "+l)
	}
	return out
}

// shellJoin writes argv as a shell would need it typed.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=,:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
