package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lastPID is the kernel's last pid handed out in this pid namespace:
// root may set it, so that the next process gets the pid after it.
const lastPID = "/proc/sys/kernel/ns_last_pid"

// withPID runs start until the process it starts gets pid (others may fork
// in between) and returns that process; a process of another pid is
// killed and tried again.
func withPID(t *testing.T, pid int, start func() *exec.Cmd) *exec.Cmd {
	t.Helper()
	for range 500 {
		if err := os.WriteFile(lastPID, []byte(strconv.Itoa(pid-1)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := start()
		if cmd.Process.Pid == pid {
			return cmd
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Fatalf("pid %d was not handed out again", pid)
	return nil
}

// asUser starts argv as u, the leader of a process group of its own, as
// an unrelated service would run; it is killed when the test ends.
func asUser(t *testing.T, u tuser, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// reapOrphans makes the test a subreaper while it runs, as init is on a
// host: a session's process that outlives a killed daemon comes back here
// and, once killed, can be reaped, so that its pid can be handed out
// again (this machine's PID 1 reaps nothing).
func reapOrphans(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

// killAndReap kills pid, an orphan that came back to the test, and reaps
// it.
func killAndReap(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatalf("reap %d: %v", pid, err)
	}
}

// TestRecoveryLeavesAReusedPIDAlone: a session's process dies while no
// daemon runs, and another user's process, a process group's leader,
// gets its pid. The next daemon must not signal it (it once SIGKILLed
// that process's group), and ends the session as crashed.
func TestRecoveryLeavesAReusedPIDAlone(t *testing.T) {
	reapOrphans(t)
	u, other := newUser(t), newUser(t)
	d := rootDaemon(t, u)
	dir := u.project(t)
	r := u.ctl(t, d.sock, "start", "-q", dir, "--", "sleep", "1000")
	if r.code != 0 {
		t.Fatal(r)
	}
	id := strings.TrimSpace(r.stdout)
	pid := d.waitState(id, 10*time.Second, "running").PID
	d.kill9()
	killAndReap(t, pid)
	reused := withPID(t, pid, func() *exec.Cmd { return asUser(t, other, "sleep", "1000") })

	d2 := startDaemonWith(t, d.stateDir, d.sock, fmt.Sprintf("allowed_groups = [%q]\n[defaults]\ncheckpoint = \"\"\n", u.group))
	rec := d2.waitEnded(id, 20*time.Second)
	if rec.EndReason != "crashed" || rec.ExitCode != nil {
		t.Errorf("session ended %s (exit %v), want crashed with the exit status unknown", rec.EndReason, rec.ExitCode)
	}
	time.Sleep(200 * time.Millisecond)
	if !alive(reused.Process.Pid) {
		t.Fatalf("the daemon killed %s's process %d, which had reused the session's pid", other.name, pid)
	}
	_, raw := d2.readRecordFile(id)
	if !strings.Contains(string(raw), "is another process now") || !strings.Contains(string(raw), "left alone") {
		t.Errorf("the record does not say the pid was another process's and left alone:\n%s", raw)
	}
}

// hostileRecords writes n records of live sessions into stateDir: their
// pids name the daemon-to-be (pid self), PID 1, the test itself, live
// processes of another user (with start times that are not theirs), pids
// nobody has, records without a start time or of another boot; and some
// files that are not records at all.
func hostileRecords(t *testing.T, stateDir string, n, self int, u tuser, dir string, victims []int) {
	t.Helper()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(stateDir, "sessions")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range n {
		id := fmt.Sprintf("h%07d", i)
		pid, start, bootID := 0, uint64(rand.IntN(1<<30)+1), strings.TrimSpace(string(boot))
		switch i % 8 {
		case 0, 1:
			pid = self
		case 2:
			pid = 1
		case 3:
			pid = os.Getpid()
		case 4:
			pid = victims[i%len(victims)]
		case 5:
			pid = 30000 + i%2000
		case 6:
			pid, start = victims[i%len(victims)], 0
		case 7:
			pid, bootID = victims[i%len(victims)], "another-boot"
		}
		rec := map[string]any{
			"id": id, "name": "h" + strconv.Itoa(i), "project_dir": dir, "command": []string{"sleep", "1000"},
			"state": []string{"running", "warned", "stopping", "working"}[i%4], "started_at": now.Add(-time.Hour),
			"deadline": now.Add(time.Hour), "pid": pid, "start_time": start, "boot_id": bootID, "uid": u.uid,
			"files_changed": []string{}, "log_path": filepath.Join(root, id, "output.log"),
		}
		if i%4 == 2 {
			rec["end_reason"] = "interrupted"
		}
		b, _ := json.Marshal(rec)
		if err := os.MkdirAll(filepath.Join(root, id), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, id, "session.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i, junk := range []string{"{", `{"id": 7}`, "\x00\x01", `{"id":"elsewhere","state":"running","pid":1}`, `[]`} {
		id := fmt.Sprintf("junk%03d", i)
		_ = os.MkdirAll(filepath.Join(root, id), 0o700)
		if err := os.WriteFile(filepath.Join(root, id, "session.json"), []byte(junk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecoveryOfHostileRecords: 5000 records marked live whose pids now
// name anything, the daemon's own among them, and records that are not
// records: the daemon comes up, signals none of those processes, ends
// every session and says what it did in one line.
func TestRecoveryOfHostileRecords(t *testing.T) {
	u, other := newUser(t), newUser(t)
	dir := u.project(t)
	var victims []int
	for range 4 {
		victims = append(victims, asUser(t, other, "sleep", "1000").Process.Pid)
	}
	stateDir := filepath.Join(t.TempDir(), "state")
	sock := newSocketPath(t)
	cfg := fmt.Sprintf("allowed_groups = [%q]\nhistory_limit = 0\n[defaults]\ncheckpoint = \"\"\n", u.group)
	// The daemon is to get the pid its records name: the last pid plus
	// a few, set just before it starts.
	var d *daemon
	for range 20 {
		b, err := os.ReadFile(lastPID)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		self := last + 50
		os.RemoveAll(stateDir)
		hostileRecords(t, stateDir, 5000, self, u, dir, victims)
		if err := os.WriteFile(lastPID, []byte(strconv.Itoa(self-1)), 0o644); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		d = startDaemonWith(t, stateDir, sock, cfg)
		t.Logf("the daemon (pid %d) answered %s after its start, over 5000 hostile records", d.cmd.Process.Pid, time.Since(began).Round(time.Millisecond))
		if d.cmd.Process.Pid == self {
			break
		}
		d.stop()
		d = nil
	}
	if d == nil {
		t.Fatal("the daemon never got the pid its records name")
	}
	for _, pid := range victims {
		if !alive(pid) {
			t.Errorf("%s's process %d, named by records, was killed", other.name, pid)
		}
	}
	// Every record's session is ended.
	waitFor(t, 60*time.Second, "every recorded session to end", func() (bool, string) {
		r := d.ctl("ps", "-q")
		return r.code == 0 && strings.TrimSpace(r.stdout) == "", r.String()
	})
	if r := d.ctl("ps", "-a", "-q"); len(strings.Fields(r.stdout)) != 5000 {
		t.Errorf("ps -a lists %d sessions, want the 5000 records", len(strings.Fields(r.stdout)))
	}
	select {
	case <-d.exited:
		t.Fatalf("the daemon exited: %v", d.exitErr)
	default:
	}
	logb, _ := os.ReadFile(d.logPath)
	var summary string
	for _, line := range strings.Split(string(logb), "\n") {
		if strings.Contains(line, "recovered session records") {
			summary = line
		}
	}
	for _, want := range []string{`"records":5000`, `"skipped_unreadable":4`, `"skipped_mismatched_id":1`, `"adopted":0`} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary line %q lacks %s", summary, want)
		}
	}
	if n := strings.Count(string(logb), "killing"); n > 0 {
		t.Errorf("the daemon killed %d processes at recovery", n)
	}
}

// startTimes is how long user u's sessionctl start of one session takes
// on each daemon of ds, in its project dirs[i]: the median of n, each
// stopped after. The daemons take turns, so that what else the machine
// does meanwhile slows each of them alike.
func startTimes(t *testing.T, u tuser, ds []*daemon, dirs []string, n int) []time.Duration {
	t.Helper()
	ts := make([][]time.Duration, len(ds))
	for range n {
		for i, d := range ds {
			began := time.Now()
			r := u.ctl(t, d.sock, "start", "-q", dirs[i], "--", "sleep", "1000")
			ts[i] = append(ts[i], time.Since(began))
			if r.code != 0 {
				t.Fatal(r)
			}
			if r := u.ctl(t, d.sock, "stop", strings.TrimSpace(r.stdout)); r.code != 0 {
				t.Fatal(r)
			}
		}
	}
	medians := make([]time.Duration, len(ds))
	for i := range ts {
		slices.Sort(ts[i])
		medians[i] = ts[i][len(ts[i])/2]
	}
	return medians
}

// TestFairStarts: one user's 6000 sessions do not slow another user's
// start (against an empty daemon beside it, in turns); the limits of one
// user's starts hold, and answer what they are.
func TestFairStarts(t *testing.T) {
	a := newUser(t)
	b := newUserIn(t, a.group)
	sockDir, err := os.MkdirTemp("", "sdr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	_ = os.Chmod(sockDir, 0o755)
	conf := fmt.Sprintf("allowed_groups = [%q]\nmax_sessions_per_user = 0\nmax_starts_per_minute_per_user = 0\nmax_batch = 0\n[defaults]\ncheckpoint = \"\"\n", a.group)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), filepath.Join(sockDir, "s.sock"), conf)
	// The same daemon with nothing in it: what a start costs on this
	// machine while the test runs.
	ref := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), filepath.Join(sockDir, "r.sock"), conf)
	many := a.project(t)
	writeFile(t, filepath.Join(many, "sessiond.toml"), "[session]\nconcurrent = true\n")
	if err := os.Chown(filepath.Join(many, "sessiond.toml"), a.uid, a.gid); err != nil {
		t.Fatal(err)
	}
	one, other := b.project(t), b.project(t)
	ds, dirs := []*daemon{d, ref}, []string{one, other}

	before := startTimes(t, b, ds, dirs, 7)
	t.Logf("%s's start before: %s, on the empty daemon beside it %s", b.name, before[0].Round(time.Millisecond), before[1].Round(time.Millisecond))
	began := time.Now()
	for i := range 6 {
		batch := time.Now()
		// A batch takes a few seconds; on a loaded machine, many more.
		if r := a.ctlWithin(t, d.sock, nil, 2*time.Minute, "start", "-q", "--count", "1000", many, "--", "sleep", "100000"); r.code != 0 {
			t.Fatalf("%s", r)
		}
		t.Logf("batch %d: %s", i+1, time.Since(batch).Round(time.Millisecond))
	}
	if r := d.ctl("ps", "-q"); len(strings.Fields(r.stdout)) != 6000 {
		t.Fatalf("%d live sessions, want 6000", len(strings.Fields(r.stdout)))
	}
	t.Logf("6000 sessions started in %s", time.Since(began).Round(time.Millisecond))
	after := startTimes(t, b, ds, dirs, 9)
	crowded, empty := after[0], after[1]
	t.Logf("%s's start: %s beside %s's 6000 sessions, %s on the empty daemon beside it", b.name, crowded.Round(time.Millisecond), a.name, empty.Round(time.Millisecond))
	if crowded > 2*empty {
		t.Errorf("beside another user's 6000 sessions a start took %s, more than twice its %s on an empty daemon meanwhile", crowded, empty)
	}
	began = time.Now()
	// As root, with minutes: a stop of 6000 on a loaded machine may take
	// longer than the 30 s a user's command is given here, or a minute.
	if r := executeWithin(t, 3*time.Minute, cleanEnv(), sessionctlBin, "--socket", d.sock, "stop", "--all"); r.code != 0 {
		t.Fatal(r)
	}
	t.Logf("6000 sessions stopped in %s", time.Since(began).Round(time.Millisecond))
}

// TestUserLimits: past max_sessions_per_user, max_starts_per_minute_per_user
// and max_batch a user's start is refused, naming the limit; root's are not.
func TestUserLimits(t *testing.T) {
	u := newUser(t)
	sockDir, err := os.MkdirTemp("", "sdr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	_ = os.Chmod(sockDir, 0o755)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), filepath.Join(sockDir, "s.sock"), fmt.Sprintf(
		"allowed_groups = [%q]\nmax_sessions_per_user = 2\nmax_starts_per_minute_per_user = 4\nmax_batch = 3\n[defaults]\ncheckpoint = \"\"\n", u.group))
	dir := u.project(t)
	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\nconcurrent = true\n")
	_ = os.Chown(filepath.Join(dir, "sessiond.toml"), u.uid, u.gid)

	if r := u.ctl(t, d.sock, "start", "-q", "--count", "4", dir, "--", "sleep", "100"); r.code == 0 || !strings.Contains(r.stderr, "max_batch (3)") {
		t.Errorf("a batch of 4 past max_batch 3: %s", r)
	}
	for i := range 2 {
		if r := u.ctl(t, d.sock, "start", "-q", dir, "--", "sleep", "100"); r.code != 0 {
			t.Fatalf("start %d: %s", i+1, r)
		}
	}
	r := u.ctl(t, d.sock, "start", "-q", dir, "--", "sleep", "100")
	if r.code == 0 || !strings.Contains(r.stderr, "max_sessions_per_user (2)") {
		t.Errorf("a third live session past max_sessions_per_user 2: %s", r)
	}
	// Root is not limited.
	for range 3 {
		if r := d.ctl("start", "-q", dir, "--", "sleep", "100"); r.code != 0 {
			t.Errorf("root's start: %s", r)
		}
	}
	// Three starts taken of four this minute (the refused one counts):
	// one more fits, the next is refused, saying when.
	if r := u.ctl(t, d.sock, "stop", "--all"); r.code != 0 {
		t.Fatal(r)
	}
	if r := u.ctl(t, d.sock, "start", "-q", dir, "--", "sleep", "100"); r.code != 0 {
		t.Fatalf("the fourth start of the minute: %s", r)
	}
	r = u.ctl(t, d.sock, "start", "-q", dir, "--", "sleep", "100")
	if r.code == 0 || !strings.Contains(r.stderr, "max_starts_per_minute_per_user (4)") || !strings.Contains(r.stderr, "allowed in") {
		t.Errorf("a fifth start in a minute past max_starts_per_minute_per_user 4: %s", r)
	}
	// Over the API: 429, with the limit in the body.
	curl := exec.Command("curl", "-s", "-w", "\n%{http_code}", "--unix-socket", d.sock, "-X", "POST",
		"-H", "Content-Type: application/json", "--data", fmt.Sprintf(`{"dir":%q,"command":["sleep","1"]}`, dir), "http://sessiond/v1/sessions")
	curl.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	out, err := curl.Output()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.TrimSpace(string(out))
	body, code := text[:max(strings.LastIndexByte(text, '\n'), 0)], text[strings.LastIndexByte(text, '\n')+1:]
	if code != "429" || !strings.Contains(body, `"code":"too_many_requests"`) {
		t.Errorf("POST /v1/sessions past the limit: %s %s, want 429 too_many_requests", code, body)
	}
}

// TestLookupsAsTheUser: a root daemon looks a session's executables up
// (its command, a service's, worktree_setup's) with the user's rights, so
// that what a start says of a path in root's own directory is the same
// whether it exists or not.
func TestLookupsAsTheUser(t *testing.T) {
	u := newUser(t)
	d := rootDaemon(t, u)
	secret := t.TempDir() // root's, 0700
	if err := os.Chmod(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	exists := filepath.Join(secret, "tool")
	if err := os.WriteFile(exists, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(secret, "nothing")
	dir := u.project(t)
	answer := func(argv ...string) string {
		r := u.ctl(t, d.sock, append([]string{"start", "-q", dir, "--"}, argv...)...)
		if r.code == 0 {
			t.Fatalf("a start of %v as %s succeeded", argv, u.name)
		}
		return strings.NewReplacer(exists, "PATH", missing, "PATH").Replace(r.stderr)
	}
	a, b := answer(exists), answer(missing)
	t.Logf("both: %s", a)
	if a != b {
		t.Errorf("the answers tell an existing file in root's directory from a missing one:\n  exists:  %s  missing: %s", a, b)
	}
	// A PATH lookup the same: a name found only in root's directory is
	// not found.
	r := u.ctl(t, d.sock, "start", "-q", "--env", "PATH="+secret, dir, "--", "tool")
	if r.code == 0 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("a command on a PATH the user cannot search: %s", r)
	}
	// A service's command likewise.
	writeFile(t, filepath.Join(dir, "sessiond.toml"), fmt.Sprintf("[[service]]\nname = \"svc\"\ncommand = [%q]\n", exists))
	_ = os.Chown(filepath.Join(dir, "sessiond.toml"), u.uid, u.gid)
	svcA := u.ctl(t, d.sock, "start", "-q", dir, "--", "sleep", "100")
	writeFile(t, filepath.Join(dir, "sessiond.toml"), fmt.Sprintf("[[service]]\nname = \"svc\"\ncommand = [%q]\n", missing))
	svcB := u.ctl(t, d.sock, "start", "-q", dir, "--", "sleep", "100")
	norm := func(r result) string {
		return strings.NewReplacer(exists, "PATH", missing, "PATH").Replace(r.stderr)
	}
	if svcA.code == 0 || svcB.code == 0 || norm(svcA) != norm(svcB) {
		t.Errorf("a service's command in root's directory:\n  exists:  %s\n  missing: %s", svcA, svcB)
	}
}
