package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBenchTool builds bench/NAME.go (a program of its own, built by the
// benches that run it) into dir.
func buildBenchTool(t *testing.T, dir, name string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, filepath.Join("bench", name+".go"))
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build bench/%s.go: %v\n%s", name, err, out)
	}
	return bin
}

// The start's floor that bench/ps.sh prints is what it says: each start
// answers once its command runs in the project and its record is written,
// and the server takes its children with it. As designed (-design), each
// start also leaves the session's log and environment, the project's
// context.md and then its lock, and runs its command in a cgroup of its
// own where a cgroup v2 hierarchy here takes one, which the server removes
// with its children.
func TestBenchStartFloorStarts(t *testing.T) {
	dir := t.TempDir()
	bin := buildBenchTool(t, dir, "startfloor")
	t.Run("bare", func(t *testing.T) { startFloorStarts(t, bin, false) })
	t.Run("design", func(t *testing.T) { startFloorStarts(t, bin, true) })
}

func startFloorStarts(t *testing.T, bin string, design bool) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	sock, state := filepath.Join(dir, "s.sock"), filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "-sock", sock, "-dir", state, "-sleep", sleep}
	if design {
		args = append(args, "-design")
	}
	server := exec.Command(bin, args...)
	server.Stderr = os.Stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- server.Wait() }()
	var pids []int
	defer func() {
		_ = server.Process.Kill()
		<-served
		// A test that failed first leaves the server's work to undo: its
		// commands and (as designed) their cgroups.
		for _, pid := range pids {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
			removeCgroupTree(filepath.Join(root, "startfloor-"+strconv.Itoa(server.Process.Pid)))
		}
	}()
	waitFor(t, 10*time.Second, "the floor's socket", func() (bool, string) {
		_, err := os.Stat(sock)
		return err == nil, fmt.Sprint(err)
	})

	for i := 1; i <= 3; i++ {
		project := filepath.Join(dir, "p", strconv.Itoa(i))
		if err := os.MkdirAll(project, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "start", "-sock", sock, project).Output()
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("start %d printed %q, not a pid", i, out)
		}
		pids = append(pids, pid)
		// Answered: the command runs sleep in the project, in a group of
		// its own, and the session's record is there.
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err != nil || filepath.Base(exe) != "sleep" {
			t.Errorf("start %d: pid %d runs %q (%v), not sleep", i, pid, exe, err)
		}
		if cwd, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); cwd != project {
			t.Errorf("start %d: pid %d runs in %q, not %s", i, pid, cwd, project)
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
			t.Errorf("start %d: pid %d is in group %d (%v), not its own", i, pid, pgid, err)
		}
		if st, err := os.Stat(filepath.Join(state, strconv.Itoa(i), "session.json")); err != nil || st.Size() != 1862 {
			t.Errorf("start %d: record %v, %v; want 1862 bytes", i, st, err)
		}
		if design {
			designedStart(t, i, pid, server.Process.Pid, project, filepath.Join(state, strconv.Itoa(i)))
		}
	}
	if out, err := exec.Command(bin, "start", "-sock", sock, filepath.Join(dir, "nowhere")).CombinedOutput(); err == nil {
		t.Errorf("a start in a missing directory answered %q", out)
	}
	out, err := exec.Command(bin, "stop", "-sock", sock).CombinedOutput()
	if err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	var cgroups int
	if _, err := fmt.Sscanf(string(out), "stopped cgroups %d", &cgroups); err != nil {
		t.Fatalf("stop said %q: %v", out, err)
	}
	if !design && cgroups != 0 {
		t.Errorf("the bare floor made %d cgroups", cgroups)
	}
	if design && cgroups != 0 && cgroups != len(pids) {
		t.Errorf("%d cgroups made for %d starts", cgroups, len(pids))
	}
	select {
	case err := <-served:
		served <- err
		if err != nil {
			t.Errorf("the server ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not end after stop")
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d is still there after stop: %v", pid, err)
		}
	}
	for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		left := filepath.Join(root, "startfloor-"+strconv.Itoa(server.Process.Pid))
		if _, err := os.Stat(left); err == nil {
			t.Errorf("the server left its cgroup %s", left)
		}
	}
}

// removeCgroupTree removes the cgroup dir and the cgroups in it, each once
// its processes are gone; nothing if there is none.
func removeCgroupTree(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	for i := 0; i < 100 && errors.Is(syscall.Rmdir(dir), syscall.EBUSY); i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

// designedStart checks what a start of the floor as designed leaves: the
// session's log (the command's output) and environment, the project's
// context.md and then its lock, and the command in a cgroup of its own
// where the server made one.
func designedStart(t *testing.T, i, pid, server int, project, session string) {
	t.Helper()
	if fd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/1"); err != nil || fd != filepath.Join(session, "output.log") {
		t.Errorf("start %d: the command's output goes to %q (%v), not the session's log", i, fd, err)
	}
	if env, err := os.ReadFile(filepath.Join(session, "environ")); err != nil || !strings.Contains(string(env), "PATH=") {
		t.Errorf("start %d: environment %q, %v; want the server's", i, env, err)
	}
	if env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err != nil || !strings.Contains(string(env), "HOME=") {
		t.Errorf("start %d: the command's environment %q (%v) is not the caller's", i, env, err)
	}
	if st, err := os.Stat(filepath.Join(project, ".sessiond", "context.md")); err != nil || st.Size() != 633 {
		t.Errorf("start %d: context.md %v, %v; want 633 bytes", i, st, err)
	}
	waitFor(t, 10*time.Second, "the project's lock", func() (bool, string) {
		st, err := os.Stat(filepath.Join(project, ".sessiond", "session.lock"))
		return err == nil && st.Size() == 207, fmt.Sprint(st, err)
	})
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := "/startfloor-" + strconv.Itoa(server) + "/" + strconv.Itoa(i)
	for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(root + own); err != nil {
			continue // not made there
		}
		for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
			if path, ok := strings.CutPrefix(line, "0::"); ok && path != own {
				t.Errorf("start %d: the command is in cgroup %s, not its own (%s)", i, path, own)
			}
		}
	}
}

// The stop's floor signals, reaps and, with writes, leaves each end's
// files.
func TestBenchStopFloorStops(t *testing.T) {
	dir := t.TempDir()
	bin := buildBenchTool(t, dir, "stopfloor")
	for _, writes := range []string{"false", "true"} {
		d := filepath.Join(dir, writes)
		out, err := exec.Command(bin, "-n", "3", "-dir", d, "-writes="+writes).Output()
		if err != nil {
			t.Fatalf("-writes=%s: %v", writes, err)
		}
		f := strings.Fields(string(out))
		if len(f) != 4 || f[0] != "stopfloor" || f[1] != "3" {
			t.Fatalf("-writes=%s printed %q", writes, out)
		}
		if secs, err := strconv.ParseFloat(f[2], 64); err != nil || secs <= 0 {
			t.Errorf("-writes=%s: %q seconds", writes, f[2])
		}
		for i := 1; i <= 3; i++ {
			_, err := os.Stat(filepath.Join(d, "p", strconv.Itoa(i), ".sessiond", "handoff.json"))
			if (err == nil) != (writes == "true") {
				t.Errorf("-writes=%s: project %d's handoff: %v", writes, i, err)
			}
		}
	}
}
