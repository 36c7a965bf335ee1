package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// reuse makes the next process this test starts get pid (the kernel's
// ns_last_pid, root only) and starts it as its own process group's leader,
// as an unrelated service would be: retried, as other processes may fork
// in between.
func reuse(t *testing.T, pid int) *Child {
	t.Helper()
	const lastPID = "/proc/sys/kernel/ns_last_pid"
	if os.Geteuid() != 0 {
		t.Fatalf("making a pid be reused needs root (%s)", lastPID)
	}
	for range 200 {
		if err := os.WriteFile(lastPID, []byte(strconv.Itoa(pid-1)), 0o644); err != nil {
			t.Fatal(err)
		}
		c, _ := spawn(t, nil, "exec sleep 1000")
		if c.PID == pid {
			return c
		}
		_ = c.SignalGroup(unix.SIGKILL)
		wait(t, c)
	}
	t.Fatalf("pid %d was not reused", pid)
	return nil
}

func TestReusedPIDIsNotSignalled(t *testing.T) {
	old, _ := spawn(t, nil, "exec sleep 1000")
	recorded := old.Process()
	if err := old.SignalGroup(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(t, old)
	// At once: the new process may well start in the old one's clock
	// tick, with its start time.
	other := reuse(t, recorded.PID)
	t.Logf("pid %d: recorded start %d ino %d, now start %d ino %d", recorded.PID, recorded.Start, recorded.Ino, other.StartTime, other.Ino)
	if err := recorded.Signal(unix.SIGKILL); !errors.Is(err, ErrNotProven) {
		t.Errorf("Signal of the recorded process = %v, want ErrNotProven", err)
	}
	if err := recorded.SignalGroup(unix.SIGKILL); !errors.Is(err, ErrNotProven) {
		t.Errorf("SignalGroup of the recorded process = %v, want ErrNotProven", err)
	}
	// As recovery would see it: a process it did not spawn, with the
	// record's pid and start time.
	watched, _ := Watched(recorded)
	if err := watched.SignalGroup(unix.SIGKILL); !errors.Is(err, ErrNotProven) {
		t.Errorf("SignalGroup of a watched child = %v, want ErrNotProven", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	KillSession(ctx, "no-such-session", watched, false)
	time.Sleep(50 * time.Millisecond)
	if !alive(other.PID) {
		t.Fatal("the process that reused the pid was killed")
	}
	if a, err := Adopt(recorded); err == nil {
		t.Errorf("Adopt of a reused pid succeeded: %+v", a)
	}
}

func TestDaemonNeverSignalsItself(t *testing.T) {
	start, err := StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Process{{PID: os.Getpid(), Start: start}, {PID: 1, Start: 1}, {PID: unix.Getpgrp(), Start: start}} {
		if err := p.Signal(unix.SIGTERM); !errors.Is(err, ErrNotProven) {
			t.Errorf("Signal(%+v) = %v, want ErrNotProven", p, err)
		}
		if err := p.SignalGroup(unix.SIGTERM); !errors.Is(err, ErrNotProven) {
			t.Errorf("SignalGroup(%+v) = %v, want ErrNotProven", p, err)
		}
	}
	if _, err := Adopt(Process{PID: os.Getpid(), Start: start}); err == nil {
		t.Error("Adopt of the daemon itself succeeded")
	}
	// A start time of 0 proves nothing.
	c, _ := spawn(t, nil, "exec sleep 1000")
	if err := (Process{PID: c.PID}).Signal(unix.SIGKILL); !errors.Is(err, ErrNotProven) || !alive(c.PID) {
		t.Errorf("Signal without a start time = %v (alive %v)", err, alive(c.PID))
	}
}

func TestProvenGroupSignal(t *testing.T) {
	dir := t.TempDir()
	member := filepath.Join(dir, "member")
	c, _ := spawn(t, nil, "sleep 1000 & echo $! > "+member+"; wait")
	m := readPid(t, member)
	// The same process, as a daemon that did not spawn it knows it.
	watched, _ := Watched(c.Process())
	if err := watched.SignalGroup(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(t, c)
	deadline := time.Now().Add(5 * time.Second)
	for alive(m) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(m) {
		t.Errorf("member %d of the group survived", m)
	}
}
