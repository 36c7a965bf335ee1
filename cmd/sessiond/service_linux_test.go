package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kardianos/service"

	sdcgroup "github.com/sessiond/sessiond/daemon/cgroup"
)

// TestOnlySystemdIsChosen: with kardianos/service restricted, a host
// without a running systemd gets no service system at all — never SysV,
// upstart or OpenRC.
func TestOnlySystemdIsChosen(t *testing.T) {
	restrictToSystemd()
	chosen := service.ChosenSystem()
	if systemdRunning() {
		if chosen == nil || chosen.String() != "linux-systemd" {
			t.Fatalf("systemd runs, chosen system = %v", chosen)
		}
		return
	}
	if chosen != nil {
		t.Fatalf("systemd does not run, yet kardianos/service chose %s", chosen)
	}
	if _, err := service.New(controlOnly{}, &service.Config{Name: "sessiond"}); err == nil {
		t.Fatal("service.New succeeded without a service system")
	}
}

// namespace is a private mount namespace, set up by a shell script and held
// open by a process of its own; commands run in it through nsenter. The
// rest of the machine sees none of its mounts.
type namespace struct {
	pid   int
	stdin io.Closer
}

func newNamespace(t *testing.T, setup string) *namespace {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a private mount namespace (the tests run as root here and in CI)")
	}
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux) is missing: %v", tool, err)
		}
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-ec", setup+"\necho ready\nexec cat >/dev/null")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("namespace setup failed (%v): %s%s", err, line, stderr.String())
	}
	return &namespace{pid: cmd.Process.Pid, stdin: stdin}
}

// command runs name in the namespace, with env added to the test's.
func (ns *namespace) command(env []string, name string, args ...string) *exec.Cmd {
	c := exec.Command("nsenter", append([]string{"--mount=/proc/" + strconv.Itoa(ns.pid) + "/ns/mnt", "--", name}, args...)...)
	c.Env = append(os.Environ(), env...)
	return c
}

// result is one run of the sessiond binary.
type result struct {
	out  string // stdout and stderr
	code int
}

func (ns *namespace) sessiond(t *testing.T, env []string, exe string, args ...string) result {
	t.Helper()
	out, err := ns.command(env, exe, args...).CombinedOutput()
	r := result{out: string(out)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("sessiond %s: %v", strings.Join(args, " "), err)
	}
	return r
}

func (r result) want(t *testing.T, what string, code int, words ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("%s: exit %d, want %d\n%s", what, r.code, code, r.out)
	}
	for _, w := range words {
		if !strings.Contains(r.out, w) {
			t.Errorf("%s: output lacks %q:\n%s", what, w, r.out)
		}
	}
}

func buildSessiond(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "sessiond")
}

// files lists every file (not directory) under root.
func files(t *testing.T, root string) []string {
	t.Helper()
	var list []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			list = append(list, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestServiceWithoutSystemd runs every service command of the real binary
// on a host whose init is not systemd — this one, or, where systemd runs, a
// namespace that hides it — and checks that each says what to do instead
// and writes nothing: no unit, no SysV init script, no rc links.
func TestServiceWithoutSystemd(t *testing.T) {
	exe := buildSessiond(t)
	scratch := t.TempDir()
	dirs := map[string]string{}
	var setup strings.Builder
	setup.WriteString("mkdir -p /run/systemd\nmount -t tmpfs -o mode=0755 tmpfs /run/systemd\n")
	for _, d := range []string{"/etc/systemd/system", "/etc/init.d", "/etc/rc2.d", "/etc/init"} {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		dirs[d] = filepath.Join(scratch, strings.ReplaceAll(d, "/", "_"))
		if err := os.Mkdir(dirs[d], 0o755); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&setup, "mount --bind %s %s\n", dirs[d], d)
	}
	ns := newNamespace(t, setup.String())
	home := filepath.Join(scratch, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home}
	for _, verb := range []string{"install", "uninstall", "start", "stop", "restart", "status"} {
		for _, flags := range [][]string{nil, {"--user"}} {
			args := append([]string{verb}, flags...)
			if verb == "install" {
				args = append(args, "--force")
			}
			r := ns.sessiond(t, env, exe, args...)
			code := 1
			if verb == "status" {
				code = statusUnknown
			}
			r.want(t, strings.Join(args, " "), code, "systemd is not running on this host", "sessiond run", "sessiond exec", "docs/operations.md")
			if strings.Contains(r.out, "SystemV") || strings.Contains(r.out, "init.d") {
				t.Errorf("%s mentions SysV:\n%s", strings.Join(args, " "), r.out)
			}
		}
	}
	for d, scratchDir := range dirs {
		if left := files(t, scratchDir); len(left) > 0 {
			t.Errorf("%s got files: %q", d, left)
		}
	}
	if left, _ := os.ReadDir(home); len(left) > 0 {
		t.Errorf("the home directory got %v", left)
	}
}

// TestSystemService installs the system service in a namespace where
// systemd looks booted: refused from a temporary directory, rolled back
// when the manager refuses the unit, left alone when a package provides
// it. The only system manager here would be the machine's PID 1, so a
// systemctl that answers `show` and fails `enable` stands in for it.
func TestSystemService(t *testing.T) {
	exe := buildSessiond(t)
	scratch := t.TempDir()
	unitDir := filepath.Join(scratch, "etc-systemd-system")
	vendorDir := filepath.Join(scratch, "usr-lib-systemd-system")
	bin := filepath.Join(scratch, "bin")
	for _, d := range []string{unitDir, vendorDir, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(scratch, "systemctl.log")
	fake := `#!/bin/sh
echo "$@" >> ` + log + `
case "$1" in
show) echo LoadState=not-found; echo ActiveState=inactive; echo MainPID=0 ;;
enable) echo "Failed to enable unit: Access denied" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	// /usr/local/bin: a stable place for the executable, in the namespace only.
	ns := newNamespace(t, "mkdir -p /run/systemd\nmount -t tmpfs tmpfs /run/systemd\nmkdir /run/systemd/system\n"+
		"mount --bind "+unitDir+" /etc/systemd/system\n"+
		"mount --bind "+vendorDir+" /usr/lib/systemd/system\n"+
		"mount -t tmpfs tmpfs /usr/local/bin\ncp "+exe+" /usr/local/bin/sessiond\n")
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
	stable := "/usr/local/bin/sessiond"

	ns.sessiond(t, env, exe, "install").want(t, "install from a temporary directory", 1,
		"refusing to install", "temporary directory", "install -m 0755", "/usr/local/bin/", "--force", "Nothing was written")
	if calls, _ := os.ReadFile(log); len(calls) > 0 {
		t.Errorf("a refused install asked the manager: %s", calls)
	}

	ns.sessiond(t, env, stable, "install").want(t, "install refused by the manager", 1,
		"install:", "Undone: removed /etc/systemd/system/sessiond.service")
	if left := files(t, unitDir); len(left) > 0 {
		t.Errorf("a failed install left %q", left)
	}
	if calls, _ := os.ReadFile(log); !strings.Contains(string(calls), "enable sessiond.service") {
		t.Errorf("install never asked the manager to enable the unit; calls:\n%s", calls)
	}

	ns.sessiond(t, env, exe, "install", "--force").want(t, "install --force from a temporary directory", 1,
		"Undone: removed /etc/systemd/system/sessiond.service")

	ns.sessiond(t, env, stable, "install", "--config", filepath.Join(scratch, "missing.toml")).want(t, "install with a missing config", 1,
		"missing.toml does not exist", "Nothing was written")

	// A package's unit.
	if err := os.WriteFile(filepath.Join(vendorDir, "sessiond.service"), []byte("[Service]\nExecStart=/usr/bin/sessiond run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns.sessiond(t, env, stable, "install").want(t, "install over a package's unit", 0,
		"already installed: /usr/lib/systemd/system/sessiond.service", "Nothing was written", "systemctl enable --now sessiond", "--force")
	ns.sessiond(t, env, stable, "uninstall").want(t, "uninstall of a package's unit", 1,
		"/usr/lib/systemd/system/sessiond.service was not written by `sessiond install`", "nothing removed")
	if left := files(t, unitDir); len(left) > 0 {
		t.Errorf("/etc/systemd/system got %q", left)
	}
	if data, err := os.ReadFile(filepath.Join(vendorDir, "sessiond.service")); err != nil || !strings.Contains(string(data), "ExecStart=/usr/bin/sessiond") {
		t.Errorf("the package's unit was touched: %q, %v", data, err)
	}
}

// TestUserServiceLifecycle installs, starts, inspects, restarts, updates,
// stops and uninstalls the user service with the real binary under a real
// systemd user manager, run in a namespace where systemd looks booted.
func TestUserServiceLifecycle(t *testing.T) {
	manager := "/lib/systemd/systemd"
	if _, err := os.Stat(manager); err != nil {
		t.Skip("systemd is not installed (.ci/run installs it)")
	}
	exe := buildSessiond(t)
	scratch := t.TempDir()
	// Sockets need short paths.
	short, err := os.MkdirTemp("", "sdu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	rt := filepath.Join(short, "rt")
	home := filepath.Join(scratch, "home")
	for _, d := range []string{rt, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	socket := filepath.Join(short, "s.sock")
	stateDir := filepath.Join(scratch, "state")
	cfg := filepath.Join(scratch, "sessiond.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("socket = %q\nstate_dir = %q\n", socket, stateDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	cg := ownCgroup(t)
	ns := newNamespace(t, "mkdir -p /run/systemd\nmount -t tmpfs tmpfs /run/systemd\nmkdir /run/systemd/system\n"+
		"mount -t tmpfs tmpfs /usr/local/bin\ncp "+exe+" /usr/local/bin/sessiond\n")
	built := exe
	exe = "/usr/local/bin/sessiond"
	env := []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + rt}

	// The user manager, in a cgroup of its own so that it manages only that.
	var managerLog bytes.Buffer
	sd := ns.command(env, "sh", "-c", cg.enter+"exec "+manager+" --user")
	sd.Stdout, sd.Stderr = &managerLog, &managerLog
	if err := sd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = sd.Process.Signal(os.Interrupt)
			_ = sd.Process.Kill()
			_ = sd.Wait()
		}
		cg.remove()
	})
	private := filepath.Join(rt, "systemd", "private")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(private); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the user manager did not start:\n%s", managerLog.String())
		}
	}

	unit := filepath.Join(home, ".config", "systemd", "user", "sessiond.service")
	link := filepath.Join(home, ".config", "systemd", "user", "default.target.wants", "sessiond.service")

	ns.sessiond(t, env, exe, "status", "--user").want(t, "status before install", statusUnknown, "not installed", unit)
	ns.sessiond(t, env, exe, "start", "--user").want(t, "start before install", 1, "not installed", "sessiond install --user")
	ns.sessiond(t, env, built, "install", "--user").want(t, "install from /tmp", 1, "refusing to install", "--force")
	if _, err := os.Stat(unit); err == nil {
		t.Fatal("a refused install wrote the unit")
	}

	ns.sessiond(t, env, exe, "install", "--user", "--config", cfg).want(t, "install", 0,
		"wrote   "+unit, "linked  "+link, "runs    "+exe+" run --config "+cfg, "sessiond start --user", "journalctl --user -u sessiond")
	data, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "ExecStart="+exe+" run --config "+cfg+"\n") || !strings.Contains(string(data), "WantedBy=default.target") {
		t.Errorf("installed unit:\n%s", data)
	}
	if target, err := os.Readlink(link); err != nil || target != unit {
		t.Errorf("enable link: %q, %v", target, err)
	}
	ns.sessiond(t, env, exe, "install", "--user", "--config", cfg).want(t, "install again", 0, "already installed", "up to date", "Nothing was written")

	ns.sessiond(t, env, exe, "status", "--user").want(t, "status installed", statusNotRunning, ": stopped", unit+" (enabled)", socket, stateDir)
	ns.sessiond(t, env, exe, "stop", "--user").want(t, "stop while stopped", 0, "not running")

	r := ns.sessiond(t, env, exe, "start", "--user")
	r.want(t, "start", 0, "sessiond started (pid ")
	pid := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(r.out)
	r = ns.sessiond(t, env, exe, "status", "--user")
	r.want(t, "status running", statusRunning, ": running", "pid", socket, stateDir, "version    dev")
	if pid != nil && !strings.Contains(r.out, "pid        "+pid[1]+"\n") {
		t.Errorf("status names another pid than start (%s):\n%s", pid[1], r.out)
	}
	ns.sessiond(t, env, exe, "start", "--user").want(t, "start while running", 0, "already running")

	r = ns.sessiond(t, env, exe, "restart", "--user")
	r.want(t, "restart", 0, "sessiond restarted (pid ")
	if pid != nil && strings.Contains(r.out, "pid "+pid[1]+")") {
		t.Errorf("restart kept the pid %s", pid[1])
	}

	// Another config: install says what changes, and that a restart applies it.
	other := filepath.Join(scratch, "other.toml")
	if err := os.WriteFile(other, []byte(fmt.Sprintf("socket = %q\nstate_dir = %q\nlog_level = \"debug\"\n", socket, stateDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	ns.sessiond(t, env, exe, "install", "--user", "--config", other).want(t, "install another config", 0,
		"different definition", "- ExecStart="+exe+" run --config "+cfg, "+ ExecStart="+exe+" run --config "+other, "sessiond restart --user")

	ns.sessiond(t, env, exe, "stop", "--user").want(t, "stop", 0, "sessiond stopped")
	ns.sessiond(t, env, exe, "status", "--user").want(t, "status stopped", statusNotRunning, ": stopped")
	if _, err := os.Stat(socket); err == nil {
		t.Error("the daemon left its socket behind after stop")
	}

	ns.sessiond(t, env, exe, "start", "--user").want(t, "start for uninstall", 0, "started")
	ns.sessiond(t, env, exe, "uninstall", "--user").want(t, "uninstall", 0, "stopped the service", "removed "+unit, "removed "+link, "Kept: the config "+other, stateDir)
	if left := files(t, home); len(left) > 0 {
		t.Errorf("uninstall left %q", left)
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "systemd")); err == nil {
		t.Error("uninstall left the empty ~/.config/systemd it made")
	}
	// The daemon's own cgroups went with it: systemd's unit cgroup is
	// systemd's, and what the daemon made beside it (the v1 hierarchies of
	// a hybrid host, such as this one) it removed at its stop.
	if left := cgroupsNamed(sdcgroup.NameFor(stateDir)); len(left) > 0 {
		t.Errorf("the stopped daemon left its cgroups: %q", left)
	}
	ns.sessiond(t, env, exe, "status", "--user").want(t, "status after uninstall", statusUnknown, "not installed")
	ns.sessiond(t, env, exe, "uninstall", "--user").want(t, "uninstall again", 0, "not installed", "Nothing to remove")

	stopped = true
	_ = sd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- sd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = sd.Process.Kill()
		<-done
	}
}

// cgroupsNamed lists the cgroups called name in every hierarchy under
// /sys/fs/cgroup.
func cgroupsNamed(name string) []string {
	var found []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return nil
		}
		if e.Name() == name {
			found = append(found, p)
			return fs.SkipDir
		}
		return nil
	})
	return found
}

// cgroup is a cgroup of the test's own in every hierarchy systemd uses,
// so that a user manager started in it manages only that subtree.
type cgroup struct {
	dirs  []string
	enter string // shell commands that move the shell into it
}

func ownCgroup(t *testing.T) *cgroup {
	t.Helper()
	name := fmt.Sprintf("sessiond-test-%d", os.Getpid())
	cg := &cgroup{}
	// cgroup v2 at /sys/fs/cgroup, or the hybrid layout's two hierarchies.
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd"} {
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			continue
		}
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			t.Fatalf("create cgroup %s: %v", d, err)
		}
		cg.dirs = append(cg.dirs, d)
		cg.enter += "echo $$ > " + filepath.Join(d, "cgroup.procs") + "\n"
	}
	if len(cg.dirs) == 0 {
		t.Fatal("no cgroup hierarchy found under /sys/fs/cgroup")
	}
	return cg
}

// remove deletes the cgroup and what the manager made in it, deepest first.
func (cg *cgroup) remove() {
	for _, d := range cg.dirs {
		var all []string
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		for i := len(all) - 1; i >= 0; i-- {
			_ = os.Remove(all[i])
		}
	}
}
