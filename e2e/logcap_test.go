package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// logCapConfig caps each plain session's log at 1 MiB × 3 files.
const logCapConfig = "log_max_size = \"1MiB\"\nlog_keep = 3\n[defaults]\ncheckpoint = \"\"\n"

// logCap is what logCapConfig allows on disk at any moment: the cap plus
// one chunk (and a block of slack for a punched hole's edge).
const logCap = 3<<20 + 1<<20 + 4096

// sampleLogDisk samples, until stop is closed, the bytes a session's log
// takes on disk (output.log, its rotated files and a rotation's temporary
// files, by their allocated blocks) and keeps the peak.
func sampleLogDisk(dir string, stop <-chan struct{}, peak *atomic.Int64) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var total int64
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				n := e.Name()
				if !strings.HasPrefix(n, "output.log") || strings.HasSuffix(n, ".stamps") {
					continue
				}
				var st syscall.Stat_t
				if syscall.Stat(filepath.Join(dir, n), &st) == nil {
					total += st.Blocks * 512
				}
			}
			if total > peak.Load() {
				peak.Store(total)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	return done
}

// floodScript writes 8 × 2 × 16 MiB at once, from eight writers, then a
// line, and waits for go to appear before it writes the next burst.
const floodScript = `flood() {
	for i in 1 2 3 4 5 6 7 8; do dd if=/dev/zero bs=16M count=2 status=none & done
	wait
}
flood
echo "flood one over"
while [ ! -e go ]; do sleep 0.05; done
flood
echo "flood two over"
sleep 300
`

// TestLogCapParallelWriters: eight writers of 16 MiB blocks into one
// session's output keep its log within the cap plus one chunk, at every
// moment, and the line written after them is in the log; so do they while
// the daemon is away (killed with SIGKILL) and after it comes back.
func TestLogCapParallelWriters(t *testing.T) {
	t.Parallel()
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), logCapConfig)
	dir := project(t)
	run := script(t, dir, "run.sh", floodScript)
	id := d.start(dir, "--", run)
	sdir := filepath.Join(d.stateDir, "sessions", id)
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := sampleLogDisk(sdir, stop, &peak)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()
	waitFor(t, 60*time.Second, "the first flood's end in the log", func() (bool, string) {
		out := d.mustCtl("logs", "-n", "1", id)
		return strings.Contains(out, "flood one over"), fmt.Sprintf("%q; peak %d", out, peak.Load())
	})
	t.Logf("peak on disk with the daemon watching: %d bytes", peak.Load())
	if p := peak.Load(); p > logCap {
		t.Errorf("with the daemon watching, the log took %d bytes on disk at its peak; the cap plus one chunk is %d", p, logCap)
	}

	// The daemon is killed; the next flood runs while none watches.
	d.kill9()
	peak.Store(0)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the second flood's end on disk", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(sdir, "output.log"))
		return strings.Contains(string(b), "flood two over"), fmt.Sprintf("peak %d", peak.Load())
	})
	close(stop)
	<-sampled
	t.Logf("peak on disk with no daemon: %d bytes", peak.Load())
	if p := peak.Load(); p > logCap {
		t.Errorf("with no daemon, the log took %d bytes on disk at its peak; the cap plus one chunk is %d", p, logCap)
	}
	d = startDaemonWith(t, d.stateDir, d.sock, logCapConfig)
	if out := d.mustCtl("logs", "-n", "1", id); !strings.Contains(out, "flood two over") {
		t.Errorf("logs -n 1 after the restart: %q", out)
	}
	if rec := d.inspect(id); rec.State != "running" {
		t.Errorf("the session is %s after the floods, want running", rec.State)
	}
}

// keeperPID returns the pid of the log keeper serving the state dir, or 0.
func keeperPID(t *testing.T, stateDir string) int {
	t.Helper()
	r := execute(t, nil, "pgrep", "-f", "logkeeper --socket "+filepath.Join(stateDir, "logkeeper.sock"))
	var pid int
	fmt.Sscan(r.stdout, &pid)
	return pid
}

// TestLogKeeperDies: a log keeper killed with SIGKILL while a session
// writes is replaced by the daemon; the session never sees a broken pipe,
// and not a line of its output is lost or doubled.
func TestLogKeeperDies(t *testing.T) {
	t.Parallel()
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), logCapConfig)
	dir := project(t)
	run := script(t, dir, "run.sh", `i=0
while [ ! -e stop ]; do i=$((i+1)); echo "line $i"; sleep 0.002; done
echo "line last"
`)
	id := d.start(dir, "--", run)
	var first int
	waitFor(t, 10*time.Second, "a log keeper", func() (bool, string) {
		first = keeperPID(t, d.stateDir)
		return first != 0, ""
	})
	waitFor(t, 10*time.Second, "some output", func() (bool, string) {
		out := d.mustCtl("logs", "-n", "1", id)
		return strings.HasPrefix(out, "line "), out
	})
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a new log keeper", func() (bool, string) {
		pid := keeperPID(t, d.stateDir)
		return pid != 0 && pid != first, fmt.Sprint(pid)
	})
	// Twenty more lines through the new keeper than were on disk when it
	// came, so the log spans both keepers whatever the machine's speed.
	lastLine := func() int {
		var n int
		fmt.Sscanf(d.mustCtl("logs", "-n", "1", id), "line %d", &n)
		return n
	}
	before := lastLine()
	waitFor(t, 10*time.Second, "output through the new keeper", func() (bool, string) {
		n := lastLine()
		return n >= before+20, fmt.Sprintf("line %d, the new keeper came at line %d", n, before)
	})
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := d.waitEnded(id, 20*time.Second)
	if rec.EndReason != "complete" {
		t.Errorf("the session ended %s (exit %v), want complete", rec.EndReason, rec.ExitCode)
	}
	out := d.mustCtl("logs", id)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[len(lines)-1] != "line last" {
		t.Errorf("the log ends with %q, want the line written last", lines[len(lines)-1])
	}
	for i, l := range lines[:len(lines)-1] {
		if want := fmt.Sprintf("line %d", i+1); l != want {
			t.Fatalf("line %d of the log is %q, want %q: output was lost or doubled across the keeper's death", i+1, l, want)
		}
	}
	if len(lines) < 10 {
		t.Errorf("only %d lines", len(lines))
	}
}
