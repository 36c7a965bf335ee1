package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	cg "github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/ipc"
)

func newDoctorCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say what this host offers sessiond (cgroups, delegation, systemd, D-Bus, inotify) and how to fix what is missing",
		Long: `sessiond doctor looks at this host as a daemon run with the same config would, without changing anything:
the cgroup hierarchies, systemd and its D-Bus, delegation, the controllers the limits need, and the inotify
limits. It says what the daemon does with them (or does, when one answers on the socket) and the exact fix
for what is missing. It exits 1 when the configured limits ([defaults] memory_max, pids_max, ...) cannot hold.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd, f)
		},
	}
	cmd.Flags().StringVar(&f.config, "config", "", "config file (default $SESSIOND_CONFIG, else "+config.DefaultConfigPath()+")")
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "state directory of the daemon to judge for")
	cmd.Flags().StringVar(&f.socket, "socket", "", "socket of the daemon to ask")
	return cmd
}

func runDoctor(cmd *cobra.Command, f runFlags) error {
	out := cmd.OutOrStdout()
	cfg, err := loadConfig(f)
	if err != nil {
		return err
	}
	line := func(k, v string) { fmt.Fprintf(out, "  %-12s %s\n", k, v) }
	fmt.Fprintln(out, "sessiond doctor")
	v2, v1 := cg.Hierarchies()
	switch {
	case v2 == "":
		line("cgroup v2", "none mounted")
	case len(v1) > 0:
		line("cgroup v2", v2+" (hybrid: "+describeV1(v1)+" on v1 hierarchies beside it)")
	default:
		line("cgroup v2", v2)
	}
	if fi, err := os.Stat("/run/systemd/system"); err == nil && fi.IsDir() {
		line("systemd", "runs as PID 1")
	} else {
		line("systemd", "not PID 1 (no /run/systemd/system): cgroups come from the cgroupfs itself")
	}
	h := cg.Detect(cg.Options{Name: cg.NameFor(cfg.StateDir), Off: !cfg.CgroupsOn(), Probe: true})
	c := h.Info()
	if v, err := askDaemon(cmd.Context(), cfg.Socket); err == nil && v.Containment != nil {
		fmt.Fprintf(out, "  %-12s the daemon at %s (pid %d) does this:\n", "daemon", cfg.Socket, v.PID)
		c = *v.Containment
	}
	printContainment(out, c)
	line("inotify", inotifyLimits())
	notices, ferr := h.Fit(cfg.Defaults.Limits)
	switch {
	case !cfg.Defaults.Limits.Any():
		line("limits", "none configured in [defaults]")
	case ferr != nil:
		line("limits", "CANNOT HOLD: "+ferr.Error())
	case len(notices) > 0:
		line("limits", "best-effort, without: "+strings.Join(notices, "; "))
	default:
		line("limits", "the configured limits hold")
	}
	if ferr != nil {
		return &exitError{1, nil}
	}
	return nil
}

// printContainment says what sessions are contained in, and the fix.
func printContainment(out io.Writer, c ipc.Containment) {
	line := func(k, v string) { fmt.Fprintf(out, "  %-12s %s\n", k, v) }
	if c.Mode == cg.None {
		line("containment", "none: "+c.Why)
		line("", "a stop reaches the session's process group and what the /proc sweep finds; no limit applies")
	} else {
		line("containment", c.Mode+": "+c.Why)
		line("cgroups in", c.Path)
		line("controllers", describeControllers(c.Controllers))
	}
	if c.Fix != "" {
		line("fix", c.Fix)
	}
}

// describeControllers is "memory v2, pids v1, cpu none".
func describeControllers(m map[string]string) string {
	var parts []string
	for _, k := range cg.Controllers {
		v := m[k]
		if v == "" {
			v = "none"
		}
		parts = append(parts, k+" "+v)
	}
	return strings.Join(parts, ", ")
}

func describeV1(v1 map[string]string) string {
	var names []string
	for k := range v1 {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// inotifyLimits are the kernel's bounds on the watcher.
func inotifyLimits() string {
	read := func(name string) string {
		b, err := os.ReadFile("/proc/sys/fs/inotify/" + name)
		if err != nil {
			return "?"
		}
		return strings.TrimSpace(string(b))
	}
	w, i := read("max_user_watches"), read("max_user_instances")
	s := fmt.Sprintf("max_user_watches %s, max_user_instances %s", w, i)
	if n := atoi(w); n > 0 && n < 65536 {
		s += " (low for large projects: sysctl fs.inotify.max_user_watches=524288)"
	}
	return s
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}
