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
// and the server takes its children with it.
func TestBenchStartFloorStarts(t *testing.T) {
	dir := t.TempDir()
	bin := buildBenchTool(t, dir, "startfloor")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	sock, state := filepath.Join(dir, "s.sock"), filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	server := exec.Command(bin, "serve", "-sock", sock, "-dir", state, "-sleep", sleep)
	server.Stderr = os.Stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- server.Wait() }()
	defer func() {
		_ = server.Process.Kill()
		<-served
	}()
	waitFor(t, 10*time.Second, "the floor's socket", func() (bool, string) {
		_, err := os.Stat(sock)
		return err == nil, fmt.Sprint(err)
	})

	var pids []int
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
	}
	if out, err := exec.Command(bin, "start", "-sock", sock, filepath.Join(dir, "nowhere")).CombinedOutput(); err == nil {
		t.Errorf("a start in a missing directory answered %q", out)
	}
	if out, err := exec.Command(bin, "stop", "-sock", sock).CombinedOutput(); err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
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
