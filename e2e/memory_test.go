package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestDaemonLetsGoOfStartupPages: a moment after it is up, the daemon no
// longer keeps mapped the pages of its executable that only its start-up
// used (package exepages), and serves on, faulting back what it uses; the
// log keeper, the same executable, lets go of them once it is ready.
func TestDaemonLetsGoOfStartupPages(t *testing.T) {
	d := startDaemon(t)
	pid := d.cmd.Process.Pid
	first := statusBytes(t, pid, "RssFile")
	began := time.Now()
	waitFor(t, 20*time.Second, "the daemon's resident file pages to fall below half", func() (bool, string) {
		now := statusBytes(t, pid, "RssFile")
		return now < first/2, fmt.Sprintf("RssFile %d KiB, %d KiB when it answered", now>>10, first>>10)
	})
	settled := statusBytes(t, pid, "RssFile")
	dir := t.TempDir()
	r := runCtl(t, d.sock, nil, "start", "-q", dir, "--", "sh", "-c", "echo started; exec sleep 60")
	if r.code != 0 {
		t.Fatalf("start after the drop: %s", r)
	}
	waitFor(t, 10*time.Second, "the session's output", func() (bool, string) {
		r := runCtl(t, d.sock, nil, "logs", dir)
		return r.code == 0 && r.stdout == "started\n", r.String()
	})
	keeper := keeperPID(t, d.stateDir)
	if keeper == 0 {
		t.Fatal("no log keeper runs for the plain session")
	}
	// The keeper started as the daemon did, from the same executable: what
	// start-up faulted in is gone once it is ready (it kept some 10 MiB of
	// the daemon's 15 before; what serving uses comes back, some 5-6).
	if k := statusBytes(t, keeper, "RssFile"); k >= first*3/5 {
		t.Errorf("the log keeper has %d KiB of its executable resident, the daemon had %d KiB at its start", k>>10, first>>10)
	} else {
		t.Logf("log keeper: RssFile %d KiB, VmRSS %d KiB", k>>10, vmRSS(t, keeper)>>10)
	}
	if r := runCtl(t, d.sock, nil, "stop", dir); r.code != 0 {
		t.Fatalf("stop after the drop: %s", r)
	}
	t.Logf("daemon: RssFile %d KiB when it answered, %d KiB %s later, %d KiB after a start and a stop; VmRSS %d KiB",
		first>>10, settled>>10, time.Since(began).Round(100*time.Millisecond), statusBytes(t, pid, "RssFile")>>10, vmRSS(t, pid)>>10)
}
