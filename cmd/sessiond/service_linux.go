package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/kardianos/service"

	"github.com/sessiond/sessiond/packaging"
)

// systemdBooted is sd_booted(3)'s test: systemd is the running init.
const systemdBooted = "/run/systemd/system"

const unitName = "sessiond.service"

// noSystemd is what the service commands say on a Linux host whose init is
// not systemd, after what they did not do.
const noSystemd = `systemd is not running on this host (there is no ` + systemdBooted + `).
sessiond runs as a service only as a systemd unit, or as a launchd job on macOS. Instead:
  - run ` + "`sessiond run`" + ` in the foreground under the supervisor this host has (runit, s6,
    supervisord, OpenRC, an init script): it needs no unit and stops its sessions on SIGTERM;
  - in a container or a cluster job, make ` + "`sessiond exec [DIR] -- CMD`" + ` the entrypoint: it runs
    one session as PID 1 and exits with its exit code once the handoff is written.
See "Without systemd" in the operations guide (docs/operations.md)`

var chooseSystemd sync.Once

// restrictToSystemd leaves kardianos/service only its systemd system, and
// only while systemd runs: otherwise it would pick SysV, upstart or OpenRC
// and write init scripts instead of a unit. With systemd absent no system
// is chosen and service.New fails.
func restrictToSystemd() {
	chooseSystemd.Do(func() {
		for _, s := range service.AvailableSystems() {
			if s.String() == "linux-systemd" {
				service.ChooseSystem(systemdOnly{s})
				return
			}
		}
		service.ChooseSystem()
	})
}

// systemdOnly is kardianos' systemd system, detected by sd_booted's test
// alone (kardianos also accepts a systemctl binary with systemd as PID 1's
// name, or rpm-ostree).
type systemdOnly struct{ service.System }

func (systemdOnly) Detect() bool { return systemdRunning() }

func systemdRunning() bool {
	fi, err := os.Stat(systemdBooted)
	return err == nil && fi.IsDir()
}

// serviceHostCheck says why this host cannot have sessiond as a service,
// and what to do instead; nil when it can.
func serviceHostCheck(verb string, userMode bool) error {
	restrictToSystemd()
	if !systemdRunning() {
		return errors.New(notDone(verb) + noSystemd)
	}
	if !userMode {
		return nil
	}
	rt := userRuntimeDir()
	if _, err := os.Stat(filepath.Join(rt, "systemd", "private")); err != nil {
		name := currentUser()
		return fmt.Errorf("%sno systemd user manager runs for %s (nothing answers at %s), so there is\n"+
			"no user service to install or control.\n"+
			"Log in to a session of your own (sudo and su start none), or run `loginctl enable-linger %s`,\n"+
			"which starts your user manager now and at every boot. Or use the system service: `sudo sessiond install`",
			notDone(verb), name, filepath.Join(rt, "systemd", "private"), name)
	}
	return nil
}

func userRuntimeDir() string {
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		return rt
	}
	return fmt.Sprintf("/run/user/%d", os.Getuid())
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// serviceFiles returns the unit file that install writes, the links that
// enabling it makes, and the manager's name for the service kind.
func serviceFiles(userMode bool) (unit string, links []string, err error) {
	dir := "/etc/systemd/system"
	target := "multi-user.target"
	if userMode {
		// Where kardianos/service writes a user unit.
		home, err := os.UserHomeDir()
		if err != nil {
			return "", nil, fmt.Errorf("the user unit goes under your home directory: %w", err)
		}
		dir, target = filepath.Join(home, ".config", "systemd", "user"), "default.target"
	}
	return filepath.Join(dir, unitName), []string{filepath.Join(dir, target+".wants", unitName)}, nil
}

// serviceContent renders the unit and the kardianos/service options that
// make it write exactly that.
func serviceContent(userMode bool, exe string, args []string) (string, service.KeyValue, error) {
	unit, err := packaging.SystemdUnit(userMode, exe, args)
	if err != nil {
		return "", nil, err
	}
	return unit, service.KeyValue{"UserService": userMode, "SystemdScript": unit}, nil
}

// serviceVendorPath returns a sessiond unit that a package (or a tarball
// copied under /usr/local) installed, if there is one.
func serviceVendorPath(userMode bool) string {
	dirs := []string{"/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}
	if userMode {
		dirs = []string{"/usr/local/lib/systemd/user", "/usr/lib/systemd/user"}
	}
	for _, d := range dirs {
		p := filepath.Join(d, unitName)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// serviceQuery asks systemd about the unit.
func serviceQuery(userMode bool) (serviceState, error) {
	args := []string{"show", unitName, "--property=LoadState,ActiveState,SubState,MainPID,FragmentPath,UnitFileState"}
	if userMode {
		args = append([]string{"--user"}, args...)
	}
	var stderr bytes.Buffer
	c := exec.Command("systemctl", args...)
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		manager := "systemd"
		if userMode {
			manager = "your systemd user manager"
		}
		return serviceState{}, fmt.Errorf("cannot reach %s: systemctl %s: %w: %s", manager, strings.Join(args[:len(args)-1], " "), err, strings.TrimSpace(stderr.String()))
	}
	props := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			props[k] = v
		}
	}
	st := serviceState{Path: props["FragmentPath"], Enabled: props["UnitFileState"]}
	st.Installed = props["LoadState"] == "loaded"
	if props["LoadState"] == "masked" {
		st.Installed, st.Detail = true, "masked"
	}
	st.PID, _ = strconv.Atoi(props["MainPID"])
	switch props["ActiveState"] {
	case "active", "reloading":
		st.Running = true
	case "activating":
		st.Running, st.Detail = true, "starting"
	case "deactivating":
		st.Running, st.Detail = true, "stopping"
	case "failed":
		st.Detail = "failed"
	}
	return st, nil
}

// serviceCommandLine reads the command line a unit runs.
func serviceCommandLine(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	argv, err := packaging.ExecStart(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return argv, nil
}

// serviceHints are the commands to suggest for the service kind.
func serviceHints(userMode bool) hints {
	if userMode {
		return hints{
			kind:    "user service (systemd --user)",
			control: "sessiond %s --user",
			logs:    "journalctl --user -u sessiond",
			enabled: "it starts with your user manager",
		}
	}
	h := hints{
		kind:    "system service (systemd)",
		control: "sessiond %s",
		logs:    "journalctl -u sessiond",
		enabled: "it starts at boot",
	}
	if os.Geteuid() != 0 {
		h.control = "sudo " + h.control
		h.logs = "sudo " + h.logs
	}
	return h
}

// vendorAdvice says how to use a unit that a package installed.
func vendorAdvice(userMode bool, path string) string {
	if userMode {
		return fmt.Sprintf("%s came with sessiond's package (or a tarball copied under /usr/local):\n"+
			"enable and start it with\n  systemctl --user enable --now sessiond", path)
	}
	return fmt.Sprintf("%s came with sessiond's package (or a tarball copied under /usr/local):\n"+
		"enable and start it with\n  sudo systemctl enable --now sessiond\n"+
		"and change its settings with a drop-in (sudo systemctl edit sessiond)", path)
}

// lingerHint says when a user service would stop at logout.
func lingerHint() string {
	name := currentUser()
	if _, err := os.Stat(filepath.Join("/var/lib/systemd/linger", name)); err == nil {
		return ""
	}
	return fmt.Sprintf("note: without lingering, systemd stops user services when %s logs out, and the sessions with them.\n"+
		"      Run `loginctl enable-linger %s` to keep sessiond running.\n", name, name)
}
