package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tinyTmpfs mounts a tmpfs of size bytes on a new directory (root only)
// and returns it; the mount goes with the test.
func tinyTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("mounting a tmpfs needs root (the tests run as root here and in CI)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return p
		}
	}
}

// TestFullStateDirFailsTheStartCleanly: a session whose record cannot be
// written does not start (no child runs without its record), and the
// error says why.
func TestFullStateDirFailsTheStartCleanly(t *testing.T) {
	t.Parallel()
	state := tinyTmpfs(t, "1m")
	d := startDaemonAt(t, filepath.Join(state, "state"), newSocketPath(t))
	filler := fill(t, state)
	dir := project(t)
	marker := filepath.Join(dir, "ran")
	r := d.ctl("start", dir, "--", "touch", marker)
	if r.code != 1 || !strings.Contains(r.stderr, "no space left on device") {
		t.Errorf("start on a full state dir:\n%s", r)
	}
	time.Sleep(300 * time.Millisecond)
	if fileExists(marker) {
		t.Error("the command ran although its record could not be written")
	}
	// With room again, sessions start as usual.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	id := d.start(dir, "--", "touch", marker)
	d.waitEnded(id, 10*time.Second)
	if !fileExists(marker) {
		t.Error("the session did not run once there was room")
	}
}

// TestFullProjectRetriesTheHandoff: an end whose handoff cannot be written
// (the project's disk is full) stays stopping, says so in inspect, and
// lands once there is room; the project's earlier files are intact.
func TestFullProjectRetriesTheHandoff(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := tinyTmpfs(t, "1m")
	first := d.start(dir, "--", "true")
	d.waitEnded(first, 10*time.Second)
	before, err := os.ReadFile(filepath.Join(dir, ".sessiond", "handoff.json"))
	if err != nil {
		t.Fatal(err)
	}
	id := d.start(dir, "--", "sleep", "100")
	filler := fill(t, dir)
	stopped := time.Now()
	stop := startCtlAsync(t, d.sock, "stop", id)
	var rec record
	waitFor(t, 15*time.Second, "the end to be pending", func() (bool, string) {
		rec = d.inspect(id)
		raw := d.mustCtl("inspect", id)
		return rec.State == "stopping" && strings.Contains(raw, "not on disk yet") && strings.Contains(raw, "no space left"), raw
	})
	after, _ := os.ReadFile(filepath.Join(dir, ".sessiond", "handoff.json"))
	if string(after) != string(before) {
		t.Error("the previous handoff was changed by a failed write")
	}
	// Long enough for the stop to say what it waits for.
	sleepUntil(stopped.Add(3 * time.Second))
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r := stop.wait()
	if r.code != 0 {
		t.Errorf("stop:\n%s", r)
	}
	if !strings.Contains(r.stderr, "its command has ended; its end is not on disk yet") || strings.Contains(r.stderr, "to exit") {
		t.Errorf("the stop, its command gone and its end pending, says:\n%s", r.stderr)
	}
	rec = d.waitEnded(id, 30*time.Second)
	h := readHandoff(t, dir)
	if h.SessionID != id || rec.EndReason != "interrupted" {
		t.Errorf("after the retry: handoff of %s, end %s", h.SessionID, rec.EndReason)
	}
	if got := progressEntries(t, dir, id); got != 1 {
		t.Errorf("%d progress entries, want 1", got)
	}
}

// TestRecoveryOnAFullStateDir: the daemon restarts on a state dir with no
// room for the ends it finds. It answers at once all the same, says how
// many ends are pending (status, ps, its log), and finishes them once
// there is room, without a restart.
func TestRecoveryOnAFullStateDir(t *testing.T) {
	t.Parallel()
	mnt := tinyTmpfs(t, "2m")
	stateDir := filepath.Join(mnt, "state")
	d := startDaemonAt(t, stateDir, newSocketPath(t))
	var ids []string
	var pids []int
	for range 3 {
		id := d.start("--checkpoint", "", project(t), "--", "sleep", "1000")
		ids = append(ids, id)
	}
	for _, id := range ids {
		pids = append(pids, d.waitState(id, 10*time.Second, "running").PID)
	}
	d.kill9()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	filler := fill(t, mnt)
	began := time.Now()
	d2 := startDaemonAt(t, stateDir, d.sock)
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the daemon answered %s after its start on a full state dir, want within 5s", took)
	}
	if r := d2.ctl("ps"); r.code != 0 || !strings.Contains(r.stderr, "state dir full: 3 ends pending") {
		t.Errorf("ps on a full state dir does not say so:\n%s", r)
	}
	for _, id := range ids {
		if st := d2.inspect(id).State; st != "stopping" {
			t.Errorf("session %s, its end pending, is %s, want stopping", id, st)
		}
	}
	if out, err := exec.Command("curl", "-s", "--unix-socket", d2.sock, "http://sessiond/v1/health").Output(); err != nil || !strings.Contains(string(out), `"warning":"state dir full: 3 ends pending"`) {
		t.Errorf("GET /v1/health: %s %v", out, err)
	}
	if log, _ := os.ReadFile(d2.logPath); !strings.Contains(string(log), "state dir full: 3 ends pending") {
		t.Error("the daemon's log does not say the state dir is full")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if rec := d2.waitEnded(id, 30*time.Second); rec.EndReason != "crashed" {
			t.Errorf("session %s ended %s, want crashed", id, rec.EndReason)
		}
	}
	if r := d2.ctl("ps"); strings.Contains(r.stderr, "pending") {
		t.Errorf("ps still says ends are pending:\n%s", r)
	}
}

// TestFullStateDirHoldsTheOutput: while the state dir has no room, a plain
// session's output waits (in its pipe, then in the command's own writes)
// rather than being lost, and once there is room the log goes on where it
// stopped: every line, in order, none cut.
func TestFullStateDirHoldsTheOutput(t *testing.T) {
	t.Parallel()
	mnt := tinyTmpfs(t, "4m")
	d := startDaemonAt(t, filepath.Join(mnt, "state"), newSocketPath(t))
	id := d.start(project(t), "--", "sh", "-c", `i=0; while [ $i -lt 100000 ]; do i=$((i+1)); echo "line $i"; sleep 0.002; done`)
	logPath := d.inspect(id).LogPath
	waitFor(t, 10*time.Second, "the first lines", func() (bool, string) {
		data, _ := os.ReadFile(logPath)
		return strings.Count(string(data), "\n") >= 20, string(data)
	})
	filler := fill(t, mnt)
	time.Sleep(1500 * time.Millisecond)
	held, _ := os.ReadFile(logPath)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the log to go on once there is room", func() (bool, string) {
		data, _ := os.ReadFile(logPath)
		return len(data) > len(held)+2000, fmt.Sprint(len(data), " bytes, ", len(held), " when the disk was freed")
	})
	d.mustCtl("stop", id)
	d.waitEnded(id, 15*time.Second)
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, l := range lines {
		if want := fmt.Sprintf("line %d", i+1); l != want {
			t.Fatalf("line %d of the log is %q, want %q: output was lost or cut while the disk was full (%d lines)", i+1, l, want, len(lines))
		}
	}
}

// TestAPendingEndAcrossACrashRemovesItsCgroup: a session whose end could
// not be written (a full state dir) when the daemon was killed is ended by
// the next daemon once there is room, and its cgroup goes with the end,
// although the next daemon's sweep at start saw it still ending.
func TestAPendingEndAcrossACrashRemovesItsCgroup(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("containment is tested as root (the tests run as root here and in CI)")
	}
	mnt := tinyTmpfs(t, "2m")
	stateDir := filepath.Join(mnt, "state")
	d := startDaemonAt(t, stateDir, newSocketPath(t))
	id := d.start("--stop-grace", "1s", project(t), "--", "sleep", "7341")
	d.waitState(id, 10*time.Second, "running")
	rec := d.inspectContained(id)
	if rec.Cgroup == nil {
		t.Fatal("the session has no cgroup")
	}
	filler := fill(t, mnt)
	stop := startCtlAsync(t, d.sock, "stop", id)
	waitFor(t, 15*time.Second, "the end to be pending", func() (bool, string) {
		return len(procsRunning("sleep", "7341")) == 0 && d.inspect(id).State == "stopping", d.mustCtl("inspect", id)
	})
	d.kill9()
	stop.wait()
	d2 := startDaemonAt(t, stateDir, d.sock)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d2.waitEnded(id, 30*time.Second)
	cgroupGone(t, rec.Cgroup.Path)
}

// TestRecoveryRemovesStartsThatNeverGotTheirRecord: a session directory
// with no record, or an empty one (a start cut off before its record by a
// crash or a full disk, never answered, its command never run), is
// removed at the next daemon's start, and nothing else is.
func TestRecoveryRemovesStartsThatNeverGotTheirRecord(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	d := startDaemonAt(t, stateDir, newSocketPath(t))
	kept := d.start(project(t), "--", "true")
	d.waitEnded(kept, 10*time.Second)
	if code := d.stop(); code != 0 {
		t.Fatalf("sessiond exited %d", code)
	}
	sessions := filepath.Join(stateDir, "sessions")
	for name, record := range map[string]bool{"aaaaaaa1": true, "aaaaaaa2": false} {
		dir := filepath.Join(sessions, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"output.log", "environ"} {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if record {
			if err := os.WriteFile(filepath.Join(dir, "session.json"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	d2 := startDaemonAt(t, stateDir, d.sock)
	for _, name := range []string{"aaaaaaa1", "aaaaaaa2"} {
		if _, err := os.Stat(filepath.Join(sessions, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the directory of a start without its record, %s, is still there: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(sessions, kept)); err != nil {
		t.Errorf("an ended session's directory went too: %v", err)
	}
	if r := d2.ctl("inspect", kept); r.code != 0 {
		t.Errorf("inspect of the ended session:\n%s", r)
	}
	if log, _ := os.ReadFile(d2.logPath); !strings.Contains(string(log), `"unstarted_removed": 2`) && !strings.Contains(string(log), `"unstarted_removed":2`) {
		t.Errorf("the daemon's log does not count the removed directories:\n%s", log)
	}
}
