package cgroupfs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// testGroup is a group of its own for t in the v2 hierarchy, with its
// command's leaf, removed at t's end.
func testGroup(t *testing.T) *Group {
	t.Helper()
	m, err := ReadMounts()
	if err != nil || m.V2 == "" {
		t.Skipf("no cgroup v2 hierarchy here (%v)", err)
	}
	dir := filepath.Join(m.V2, fmt.Sprintf("sessiond-cgroupfs-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	g := NewGroup(m.V2, dir, nil, "")
	t.Cleanup(func() {
		_ = g.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.Wait(ctx)
		_ = g.Remove()
	})
	if err := os.Mkdir(filepath.Join(dir, LeafCommand), 0o755); err != nil {
		t.Fatal(err)
	}
	return g
}

// startIn starts a shell that starts two more sleepers in leaf of g, and
// returns it once all three are in.
func startIn(t *testing.T, g *Group, leaf string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "sleep 100 & sleep 100 & wait")
	err := g.Start(leaf, func(fd int) error {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd}
		return cmd.Start()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); len(g.Procs(leaf)) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("leaf %s holds %v, want the shell and two sleepers", leaf, g.Procs(leaf))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cmd
}

// endsByKill waits for cmd and says whether it ended by SIGKILL.
func endsByKill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the command still runs 5 s after the kill")
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the command ended with %v, not SIGKILL", cmd.ProcessState)
	}
}

func TestKillEndsEveryProcessOfTheGroup(t *testing.T) {
	g := testGroup(t)
	cmd := startIn(t, g, LeafCommand)
	side := startIn(t, g, LeafSidecars)
	if !g.Populated("") {
		t.Fatal("a group with processes is not populated")
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	endsByKill(t, cmd)
	endsByKill(t, side)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if isDir(g.Dir()) {
		t.Errorf("%s is still there", g.Dir())
	}
}

func TestKillLeafSparesTheOtherLeaf(t *testing.T) {
	g := testGroup(t)
	cmd := startIn(t, g, LeafCommand)
	side := startIn(t, g, LeafSidecars)
	if err := g.KillLeaf(LeafCommand); err != nil {
		t.Fatal(err)
	}
	endsByKill(t, cmd)
	if n := len(g.Procs(LeafSidecars)); n != 3 {
		t.Errorf("the sidecars' leaf holds %d processes after the command's leaf was killed, want 3", n)
	}
	if side.ProcessState != nil {
		t.Error("the sidecar ended")
	}
	if err := g.KillLeaf("gone"); err != nil {
		t.Errorf("killing a leaf that is not there: %v", err)
	}
}

// Before Linux 5.14 there is no cgroup.kill: the group is frozen, each
// process killed, and the group thawed.
func TestKillWithoutCgroupKill(t *testing.T) {
	g := testGroup(t)
	if !fileExists(filepath.Join(g.Dir(), "cgroup.freeze")) {
		t.Skip("no cgroup.freeze here")
	}
	cmd := startIn(t, g, LeafCommand)
	side := startIn(t, g, LeafSidecars)
	if err := killEach(g.Dir()); err != nil {
		t.Fatal(err)
	}
	endsByKill(t, cmd)
	endsByKill(t, side)
	if got := ReadString(filepath.Join(g.Dir(), "cgroup.freeze")); got != "0" {
		t.Errorf("cgroup.freeze is %q after the kill, want the group thawed (0)", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestAttach(t *testing.T) {
	g := testGroup(t)
	a, err := Attach(g.Record())
	if err != nil {
		t.Fatal(err)
	}
	if a.Dir() != g.Dir() {
		t.Errorf("attached to %s, want %s", a.Dir(), g.Dir())
	}
	cmd := startIn(t, a, LeafCommand)
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimPrefix(g.Dir(), a.mount) + "/" + LeafCommand + "\n"; !strings.Contains(string(data), "::"+want) {
		t.Errorf("the child is not in %s:\n%s", want, data)
	}
	for _, rec := range []*ipc.Cgroup{nil, {}, {Path: t.TempDir()}, {Path: g.Dir() + "-none"}} {
		if _, err := Attach(rec); err == nil {
			t.Errorf("Attach(%+v) found a cgroup", rec)
		}
	}
}

func TestOpen(t *testing.T) {
	g := testGroup(t)
	o, ok := Open(g.mount, g.Record())
	if !ok || o.Dir() != g.Dir() {
		t.Fatalf("Open(%+v) = %v, %v", g.Record(), o, ok)
	}
	if _, ok := Open(g.mount, &ipc.Cgroup{Path: g.Dir() + "-none"}); ok {
		t.Error("Open found a cgroup that is not there")
	}
}
