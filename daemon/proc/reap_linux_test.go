package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestReapWaitsForTheExitedOnly has 300 children running and ends them one
// at a time, then all at once: each end costs the reaper a few waits, not
// one per child still running, and every child gets its own status.
func TestReapWaitsForTheExitedOnly(t *testing.T) {
	const n = 300
	kids := make([]*Child, n)
	for i := range kids {
		kids[i], _ = spawn(t, nil, "exec sleep 100")
	}
	before := reapWaits.Load()
	for _, c := range kids[:10] {
		_ = syscall.Kill(c.PID, syscall.SIGTERM)
		if got := wait(t, c); got.Signal != "SIGTERM" {
			t.Fatalf("exit = %+v, want SIGTERM", got)
		}
	}
	if w := reapWaits.Load() - before; w > 40 {
		t.Errorf("10 ends beside %d running children took %d waits, want a few each", n-10, w)
	}
	for _, c := range kids[10:] {
		_ = syscall.Kill(c.PID, syscall.SIGKILL)
	}
	for _, c := range kids[10:] {
		if got := wait(t, c); got.Signal != "SIGKILL" {
			t.Fatalf("exit = %+v, want SIGKILL", got)
		}
	}
	t.Logf("%d ends: %d waits", n, reapWaits.Load()-before)
}

// TestReapTakesOrphans: a child's background process outlives it, comes
// back to the daemon (a subreaper) and is reaped when it ends, not left a
// zombie.
func TestReapTakesOrphans(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	c, _ := spawn(t, nil, "sleep 0.3 & echo $! > "+pidFile+"; exit 0")
	wait(t, c)
	orphan := readPid(t, pidFile)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); err != nil {
			return // reaped
		}
		if time.Now().After(deadline) {
			s, _ := readStat(orphan)
			t.Fatalf("orphan %d still there (state %c)", orphan, s.state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
