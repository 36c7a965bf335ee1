package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The main goroutine keeps the main thread (locked during init, it stays
// locked), and TestMain runs there what tests hand it on onMainThread.
func init() { runtime.LockOSThread() }

var mainThread = make(chan func())

// onMainThread runs f on the process's main thread.
func onMainThread(f func()) {
	done := make(chan struct{})
	mainThread <- func() { f(); close(done) }
	<-done
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(signalsTestEnv); mode != "" {
		os.Exit(signalsChild(mode))
	}
	if err := EnableSubreaper(); err != nil {
		panic(err)
	}
	code := make(chan int)
	go func() { code <- m.Run() }()
	for {
		select {
		case f := <-mainThread:
			f()
		case c := <-code:
			os.Exit(c)
		}
	}
}

func spawn(t *testing.T, env []string, script string) (*Child, *os.File) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	c, err := Spawn(Spec{Argv: []string{"/bin/sh", "-c", script}, Dir: t.TempDir(), Env: env, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { KillSession(context.Background(), "", c, true) })
	return c, out
}

func wait(t *testing.T, c *Child) Exit {
	t.Helper()
	select {
	case <-c.Done():
		return c.Exit()
	case <-time.After(10 * time.Second):
		t.Fatal("child did not exit")
	}
	return Exit{}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		script string
		want   Exit
	}{
		{"exit 0", Exit{Code: 0}},
		{"exit 7", Exit{Code: 7}},
		{"kill -USR1 $$", Exit{Code: -1, Signal: "SIGUSR1"}},
	}
	// Many quick exits at once: every status must reach its own child,
	// none taken by the orphan reaper.
	for range 10 {
		for _, tt := range tests {
			c, _ := spawn(t, nil, tt.script)
			if got := wait(t, c); got != tt.want {
				t.Errorf("%q: exit = %+v, want %+v", tt.script, got, tt.want)
			}
		}
	}
}

func TestOutputAndStdin(t *testing.T) {
	c, out := spawn(t, []string{"X=1"}, `echo "out $X"; echo err >&2; cat; readlink /proc/self/fd/1`)
	wait(t, c)
	b, _ := os.ReadFile(out.Name())
	got := string(b)
	if !strings.Contains(got, "out 1\nerr\n") || !strings.Contains(got, out.Name()) {
		t.Errorf("output = %q, want stdout, stderr and stdout being the file itself", got)
	}
}

func TestHelpersKeepTheirStatus(t *testing.T) {
	// While session children exit and are reaped, helper commands must
	// still get their own exit status.
	for range 20 {
		c, _ := spawn(t, nil, "exit 0")
		cmd := exec.Command("sh", "-c", "exit 3")
		err := Run(cmd)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("helper: err = %v, want exit status 3", err)
		}
		wait(t, c)
	}
}

func alive(pid int) bool {
	s, err := readStat(pid)
	return err == nil && s.state != 'Z' && s.state != 'X'
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return n
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func TestSessionProcsFindEscapees(t *testing.T) {
	dir := t.TempDir()
	gc := filepath.Join(dir, "grandchild")
	env := []string{"SESSIOND_SESSION_ID=testsess", "PATH=" + os.Getenv("PATH")}
	// The grandchild calls setsid and its parent exits: it comes back to
	// this process (a subreaper), out of the session's process group.
	script := "setsid sh -c 'echo $$ > " + gc + "; trap \"\" TERM; sleep 1000' & trap '' TERM; sleep 1000"
	c, _ := spawn(t, env, script)
	g := readPid(t, gc)
	for _, spawned := range []bool{true, false} {
		procs := pids(SessionProcs("testsess", c, spawned))
		if !slices.Contains(procs, c.PID) || !slices.Contains(procs, g) {
			t.Errorf("spawned=%v: SessionProcs = %v, want leader %d and setsid grandchild %d", spawned, procs, c.PID, g)
		}
	}
	if left := KillSession(context.Background(), "testsess", c, true); len(left) > 0 {
		t.Fatalf("left alive: %v", left)
	}
	wait(t, c)
	if alive(g) {
		t.Errorf("grandchild %d survived KillSession", g)
	}
}

func TestCatches(t *testing.T) {
	c, out := spawn(t, nil, "trap 'echo got' USR2; echo ready; while :; do sleep 0.05; done")
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(out.Name())
		if strings.Contains(string(b), "ready") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ok, err := Catches(c.PID, unix.SIGUSR2); err != nil || !ok {
		t.Errorf("Catches(USR2) = %v, %v; want true", ok, err)
	}
	if ok, err := Catches(c.PID, unix.SIGUSR1); err != nil || ok {
		t.Errorf("Catches(USR1) = %v, %v; want false", ok, err)
	}
}

func TestAliveAndStartTime(t *testing.T) {
	c, _ := spawn(t, nil, "sleep 1000")
	if c.StartTime == 0 {
		t.Fatal("no start time")
	}
	if !Alive(c.PID, c.StartTime) {
		t.Error("Alive = false for a live child")
	}
	if Alive(c.PID, c.StartTime+1) {
		t.Error("Alive = true with another start time (a reused pid)")
	}
	_ = c.SignalGroup(unix.SIGKILL)
	wait(t, c)
	if Alive(c.PID, c.StartTime) {
		t.Error("Alive = true after exit")
	}
}

func TestAdopt(t *testing.T) {
	c, _ := spawn(t, nil, "sleep 1000")
	a, err := Adopt(c.Process())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SignalGroup(unix.SIGKILL)
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("adopted process exit not seen")
	}
	if _, err := Adopt(c.Process()); err == nil {
		t.Error("Adopt of an ended process succeeded")
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "data"), nil, 0o644)
	if p, err := LookPath("tool", "/", []string{"PATH=" + dir}); err != nil || p != filepath.Join(dir, "tool") {
		t.Errorf("LookPath(tool) = %q, %v", p, err)
	}
	if _, err := LookPath("./tool", dir, nil); err != nil {
		t.Errorf("LookPath(./tool): %v", err)
	}
	for _, bad := range []string{"nope", "./data", "", dir} {
		if _, err := LookPath(bad, dir, []string{"PATH=" + dir}); !errors.Is(err, ErrNotFound) {
			t.Errorf("LookPath(%q) = %v, want ErrNotFound", bad, err)
		}
	}
}

func TestParseStat(t *testing.T) {
	line := []byte("123 (a (weird) name) S 1 123 123 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10 18446744073709551615")
	s, err := parseStat(123, line)
	if err != nil || s.ppid != 1 || s.pgrp != 123 || s.state != 'S' || s.start != 98765 {
		t.Errorf("parseStat = %+v, %v", s, err)
	}
	if _, err := parseStat(1, []byte("garbage")); err == nil {
		t.Error("parseStat(garbage) succeeded")
	}
}

func TestUsageOf(t *testing.T) {
	// A child that burns CPU for a moment, then sleeps, and one grandchild;
	// and a second session of one process.
	c, _ := spawn(t, nil, "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 100 & sleep 100")
	defer func() { _ = c.SignalGroup(unix.SIGKILL); wait(t, c) }()
	c2, _ := spawn(t, nil, "exec sleep 100")
	defer func() { _ = c2.SignalGroup(unix.SIGKILL); wait(t, c2) }()
	for _, spawned := range []bool{true, false} {
		var us []Usage
		deadline := time.Now().Add(10 * time.Second)
		for {
			us = UsageOf([]UsageQuery{{PGID: c.PID, Spawned: spawned}, {PGID: c2.PID, Spawned: spawned}})
			if us[0].Procs >= 3 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if us[0].Procs != 3 || us[1].Procs != 1 {
			t.Fatalf("spawned=%v: usage counted %d and %d processes, want the shell and its two sleeps, and one sleep", spawned, us[0].Procs, us[1].Procs)
		}
		if us[0].CPU <= 0 || us[0].RSS < 100<<10 {
			t.Errorf("spawned=%v: usage = %+v, want some CPU time and at least 100 KiB resident", spawned, us[0])
		}
	}
}
