package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// containment is what a daemon says it contains its sessions in
// (/v1/version, through sessionctl version --json).
type containment struct {
	Mode        string            `json:"mode"`
	Path        string            `json:"path"`
	Controllers map[string]string `json:"controllers"`
	Why         string            `json:"why"`
}

// contained is a session record's cgroup and memory account.
type contained struct {
	Cgroup *struct {
		Path   string            `json:"path"`
		V1     map[string]string `json:"v1"`
		Killed int               `json:"killed"`
		Empty  bool              `json:"empty"`
	} `json:"cgroup"`
	Memory *struct {
		CurrentBytes int64 `json:"current_bytes"`
		PeakBytes    int64 `json:"peak_bytes"`
		OOMKills     int64 `json:"oom_kills"`
	} `json:"memory"`
	Warnings []string `json:"warnings"`
	Warning  *struct {
		Reason string `json:"reason"`
	} `json:"warning"`
}

// containedDaemon starts a daemon and returns it with what it contains its
// sessions in; cgroups are tested as root, where this machine gives them.
func containedDaemon(t *testing.T, configTOML string) (*daemon, containment) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("containment is tested as root (the tests run as root here and in CI)")
	}
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), configTOML)
	var v struct {
		Daemon struct {
			Containment *containment `json:"containment"`
		} `json:"daemon"`
	}
	out := d.mustCtl("--json", "version")
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Daemon.Containment == nil {
		t.Fatalf("version --json: %v\n%s", err, out)
	}
	c := *v.Daemon.Containment
	if c.Mode == "none" {
		t.Fatalf("the daemon contains nothing here: %s", c.Why)
	}
	return d, c
}

// inspectContained is the session's cgroup and memory account.
func (d *daemon) inspectContained(id string) contained {
	d.t.Helper()
	var c contained
	out := d.mustCtl("inspect", id)
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		d.t.Fatalf("inspect %s: %v\n%s", id, err, out)
	}
	return c
}

// procsRunning are the live (not zombie) processes whose command line is
// argv joined by spaces.
func procsRunning(argv ...string) []int {
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	return liveProcs(func(cmdline []byte) bool { return bytes.Equal(cmdline, want) })
}

// procsWith are the live processes whose command line holds marker.
func procsWith(marker string) []int {
	return liveProcs(func(cmdline []byte) bool { return bytes.Contains(cmdline, []byte(marker)) })
}

// liveProcs are the live (not zombie) processes whose command line match
// says yes to.
func liveProcs(match func(cmdline []byte) bool) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !match(cmdline) {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) && stat[i+2] != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// cgroupOf is the cgroup v2 path of pid ("0::" line of /proc/PID/cgroup).
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return v
		}
	}
	t.Fatalf("pid %d is in no cgroup v2:\n%s", pid, data)
	return ""
}

// A command that escapes its process group with setsid and a clean
// environment (so that neither the group nor the environment sweep can
// find it) is in the session's cgroup all the same, and the stop ends it
// within the grace; the record says nothing was left.
func TestContainedStopLeavesNothingEscaped(t *testing.T) {
	d, c := containedDaemon(t, "")
	dir := project(t)
	id := d.start("--stop-grace", "3s", dir, "--", "sh", "-c", "setsid env -i sleep 7301 & sleep 7302")
	var escaped []int
	waitFor(t, 10*time.Second, "the escaped sleep to run", func() (bool, string) {
		escaped = procsRunning("sleep", "7301")
		return len(escaped) == 1, fmt.Sprint(escaped)
	})
	rec := d.inspectContained(id)
	if rec.Cgroup == nil || !strings.HasPrefix(rec.Cgroup.Path, c.Path+"/") {
		t.Fatalf("the record's cgroup is %+v, want one under %s", rec.Cgroup, c.Path)
	}
	if got, want := cgroupOf(t, escaped[0]), strings.TrimPrefix(rec.Cgroup.Path, mountOf(c.Path)); got != want+"/cmd" {
		t.Errorf("the escaped process is in %s, want %s/cmd", got, want)
	}
	// A cgroup removed by hand while its session runs: the kernel refuses.
	if err := syscall.Rmdir(rec.Cgroup.Path + "/cmd"); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("rmdir of the running session's cgroup: %v, want EBUSY", err)
	}
	began := time.Now()
	// What the command left: the escaped sleep, and its own sleep if the
	// stop signal has not ended it yet.
	if out := d.mustCtl("stop", id); !strings.Contains(out, "  contained: ") || !strings.Contains(out, " killed with its cgroup; nothing escaped") {
		t.Errorf("stop printed %q, want what its cgroup held", out)
	}
	d.waitEnded(id, 10*time.Second)
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("the stop took %s, more than its grace", took)
	}
	if left := append(procsRunning("sleep", "7301"), procsRunning("sleep", "7302")...); len(left) > 0 {
		t.Fatalf("processes outlived the stop: %v", left)
	}
	rec = d.inspectContained(id)
	if rec.Cgroup == nil || !rec.Cgroup.Empty || rec.Cgroup.Killed < 1 {
		t.Errorf("the end's account of the cgroup is %+v, want empty, with the escaped process killed", rec.Cgroup)
	}
	cgroupGone(t, rec.Cgroup.Path)
}

// A process that leaves the session's cgroup (root's may: a write to
// another cgroup's cgroup.procs) and ignores the stop signal, but stays in
// the command's process group, is killed at the end all the same.
func TestContainedStopKillsWhatLeftItsCgroup(t *testing.T) {
	d, c := containedDaemon(t, "")
	dir := project(t)
	procs := filepath.Join(mountOf(c.Path), "cgroup.procs")
	id := d.start("--stop-grace", "1s", dir, "--", "sh", "-c",
		`sh -c 'trap "" TERM; echo $$ > `+procs+`; exec sleep 7351' & sleep 7352`)
	var left []int
	waitFor(t, 10*time.Second, "the sleep that left its cgroup to run", func() (bool, string) {
		left = procsRunning("sleep", "7351")
		return len(left) == 1 && cgroupOf(t, left[0]) == "/", fmt.Sprint(left)
	})
	d.mustCtl("stop", id)
	d.waitEnded(id, 10*time.Second)
	waitFor(t, 5*time.Second, "the sleep that left its cgroup to be killed", func() (bool, string) {
		left = procsRunning("sleep", "7351")
		return len(left) == 0, fmt.Sprint(left)
	})
}

// Ended sessions' cgroups, and those of starts that failed, are removed
// once ends pause, and a daemon stopped before that removes them as it
// stops: nothing of its cgroups is left, its own included.
func TestContainedStopAllThenShutdownLeavesNoCgroup(t *testing.T) {
	d, c := containedDaemon(t, "")
	var paths []string
	for i := range 4 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("p", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		id := d.start(dir, "--", "sleep", "7330")
		rec := d.inspectContained(id)
		if rec.Cgroup == nil {
			t.Fatalf("session %s has no cgroup", id)
		}
		paths = append(paths, rec.Cgroup.Path)
	}
	// A start that fails once its cgroup is made: a service that exits
	// before it is ready.
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "sessiond.toml"), []byte("[[service]]\nname = \"db\"\ncommand = [\"sh\", \"-c\", \"exit 4\"]\nready = \"tcp://127.0.0.1:1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := d.ctl("start", bad, "--", "sleep", "7331"); r.code == 0 || !strings.Contains(r.stderr, "exited before it was ready") {
		t.Fatalf("a start whose service fails: %+v", r)
	}
	d.mustCtl("stop", "--all")
	// At once, before the removals' turn.
	if code := d.stop(); code != 0 {
		t.Fatalf("sessiond exited %d", code)
	}
	for _, p := range append(paths, c.Path) {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after the daemon stopped: %v", p, err)
		}
	}
}

// cgroupGone waits for an ended session's cgroup to be removed: once ends
// pause, soon after the end.
func cgroupGone(t *testing.T, dir string) {
	t.Helper()
	waitFor(t, 5*time.Second, "the ended session's cgroup "+dir+" to be removed", func() (bool, string) {
		_, err := os.Stat(dir)
		return errors.Is(err, os.ErrNotExist), fmt.Sprint(err)
	})
}

// mountOf is the cgroup v2 mount a cgroup directory is under.
func mountOf(dir string) string {
	for _, m := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if strings.HasPrefix(dir, m+"/") {
			return m
		}
	}
	return ""
}

const allocForever = "a=[]\nwhile True: a.append(bytearray(1 << 20))"

// memory_max: a session that allocates without bound ends with reason oom
// and a handoff that names its peak; another session of the same daemon
// runs on, and the daemon's own memory does not move. The next session
// of the project is told.
func TestMemoryMaxEndsInOOMAndSparesTheRest(t *testing.T) {
	d, c := containedDaemon(t, "")
	if c.Controllers["memory"] == "" {
		t.Fatalf("no memory controller for sessions here: %+v", c)
	}
	calm := d.start(project(t), "--", "sleep", "7303")
	rssBefore := vmRSS(t, d.cmd.Process.Pid)
	dir := project(t)
	id := d.start("--memory-max", "64M", dir, "--", "python3", "-c", allocForever)
	rec := d.waitEnded(id, 30*time.Second)
	if rec.EndReason != "oom" {
		t.Fatalf("end reason %q, want oom", rec.EndReason)
	}
	acc := d.inspectContained(id)
	if acc.Memory == nil || acc.Memory.OOMKills < 1 || acc.Memory.PeakBytes < 32<<20 {
		t.Errorf("the memory account is %+v, want an OOM kill and a peak near 64 MiB", acc.Memory)
	}
	var h struct {
		EndReason string   `json:"end_reason"`
		Warnings  []string `json:"warnings"`
	}
	data, err := os.ReadFile(filepath.Join(dir, ".sessiond", "handoff.json"))
	if err != nil || json.Unmarshal(data, &h) != nil {
		t.Fatalf("handoff: %v\n%s", err, data)
	}
	if w := strings.Join(h.Warnings, "\n"); h.EndReason != "oom" || !strings.Contains(w, "OOM killer") || !strings.Contains(w, "peak 64MiB") || !strings.Contains(w, "memory_max 64MiB") {
		t.Errorf("the handoff says %q, warnings %q: want the OOM, memory_max and the peak", h.EndReason, h.Warnings)
	}
	if r := d.inspect(calm); r.State != "running" {
		t.Errorf("the other session is %s, want running", r.State)
	}
	if after := vmRSS(t, d.cmd.Process.Pid); after > rssBefore+16<<20 {
		t.Errorf("the daemon's RSS went from %d to %d bytes", rssBefore, after)
	}
	next := d.start(dir, "--", "true")
	d.waitEnded(next, 10*time.Second)
	ctxFile, err := os.ReadFile(filepath.Join(dir, ".sessiond", "context.md"))
	if err != nil || !strings.Contains(string(ctxFile), "OOM killer") {
		t.Errorf("the next session's context.md does not tell of the OOM (%v):\n%s", err, ctxFile)
	}
}

// vmRSS is a process's resident memory in bytes.
func vmRSS(t *testing.T, pid int) int64 { t.Helper(); return statusBytes(t, pid, "VmRSS") }

// statusBytes is a size of /proc/PID/status (VmRSS, RssFile...) in bytes.
func statusBytes(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no %s for %d", field, pid)
	return 0
}

const forkForever = `import os, time # fork loop 7310
while True:
    try:
        if os.fork() == 0:
            time.sleep(300)
            os._exit(0)
    except OSError:
        time.sleep(0.01)
`

// pids_max bounds a fork loop, which runs on at its bound; the stop ends
// it and every process it made.
func TestPidsMaxBoundsAForkLoop(t *testing.T) {
	d, c := containedDaemon(t, "")
	if c.Controllers["pids"] == "" {
		t.Fatalf("no pids controller for sessions here: %+v", c)
	}
	id := d.start("--pids-max", "64", "--stop-grace", "2s", project(t), "--", "python3", "-c", forkForever)
	rec := d.inspectContained(id)
	waitFor(t, 20*time.Second, "the fork loop to reach its bound", func() (bool, string) {
		n := len(procsWith("fork loop 7310"))
		return n >= 60, fmt.Sprintf("%d processes", n)
	})
	time.Sleep(500 * time.Millisecond)
	if n := len(procsWith("fork loop 7310")); n > 64 {
		t.Errorf("%d processes with pids_max 64", n)
	}
	if r := d.inspect(id); r.State != "running" {
		t.Errorf("the session is %s at its bound, want running", r.State)
	}
	d.mustCtl("stop", id)
	end := d.waitEnded(id, 15*time.Second)
	if end.EndReason != "interrupted" {
		t.Errorf("end reason %q, want interrupted", end.EndReason)
	}
	if n := procsWith("fork loop 7310"); len(n) > 0 {
		t.Errorf("%d processes of the fork loop outlived the stop", len(n))
	}
	cgroupGone(t, rec.Cgroup.Path)
}

// A daemon killed with SIGKILL, then restarted, finds its session's cgroup
// again; the stop kills it whole, escaped processes included.
func TestAdoptedSessionsCgroupIsKilledWhole(t *testing.T) {
	reapOrphans(t)
	d, _ := containedDaemon(t, "")
	id := d.start(project(t), "--", "sh", "-c", "setsid env -i sleep 7304 & exec sleep 7305")
	waitFor(t, 10*time.Second, "both sleeps to run", func() (bool, string) {
		return len(procsRunning("sleep", "7304")) == 1 && len(procsRunning("sleep", "7305")) == 1, ""
	})
	d.kill9()
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	d2.waitState(id, 10*time.Second, "running")
	d2.mustCtl("stop", id)
	d2.waitEnded(id, 15*time.Second)
	if left := append(procsRunning("sleep", "7304"), procsRunning("sleep", "7305")...); len(left) > 0 {
		t.Fatalf("processes of the adopted session outlived its stop: %v", left)
	}
	if rec := d2.inspectContained(id); rec.Cgroup == nil || !rec.Cgroup.Empty {
		t.Errorf("the adopted session's cgroup at its end: %+v", rec.Cgroup)
	}
}

// The preflight, the sidecars and the command on a terminal (the holder's
// child, not the holder) are all born in the session's cgroup: the
// command and preflight in its cmd leaf, the sidecars in svc.
func TestEveryProcessOfASessionIsBornInItsCgroup(t *testing.T) {
	d, c := containedDaemon(t, "")
	dir := project(t)
	toml := `[session]
preflight = ["cat /proc/self/cgroup > pre.txt"]
[[service]]
name = "web"
command = ["sh", "-c", "cat /proc/self/cgroup > svc.txt; exec sleep 7306"]
`
	if err := os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	id := d.start("--tty", dir, "--", "sh", "-c", "cat /proc/self/cgroup > cmd.txt; exec sleep 7307")
	rec := d.inspectContained(id)
	base := strings.TrimPrefix(rec.Cgroup.Path, mountOf(c.Path))
	for file, leaf := range map[string]string{"pre.txt": "cmd", "svc.txt": "svc", "cmd.txt": "cmd"} {
		data := waitLine(t, filepath.Join(dir, file), 10*time.Second)
		if !strings.Contains(string(data), "0::"+base+"/"+leaf+"\n") {
			t.Errorf("%s: not born in %s/%s:\n%s", file, base, leaf, data)
		}
	}
	if pid := d.holderPID(id); strings.HasPrefix(cgroupOf(t, pid), base) {
		t.Errorf("the terminal holder %d is in the session's cgroup", pid)
	}
	d.mustCtl("stop", id)
	d.waitEnded(id, 15*time.Second)
	if left := append(procsRunning("sleep", "7306"), procsRunning("sleep", "7307")...); len(left) > 0 {
		t.Errorf("processes outlived the stop: %v", left)
	}
}

// A limit the host cannot apply is an error at start that says why,
// unless limits = "best-effort"; one it can apply is in the cgroup.
func TestALimitTheHostCannotApplyIsRefusedAtStart(t *testing.T) {
	d, c := containedDaemon(t, "")
	switch c.Controllers["memory"] {
	case "v1":
		// A hybrid host's v1 memory controller has no memory.high.
		r := d.ctl("start", project(t), "--memory-high", "1G", "--", "sleep", "1")
		if r.code == 0 || !strings.Contains(r.stderr, "memory_high") || !strings.Contains(r.stderr, "best-effort") {
			t.Fatalf("start with memory_high on v1: %s", r)
		}
		id := d.start("--memory-high", "1G", "--limits", "best-effort", project(t), "--", "sleep", "7308")
		rec := d.inspectContained(id)
		if !strings.Contains(strings.Join(rec.Warnings, "\n"), "memory_high not applied") {
			t.Errorf("best-effort start: warnings %q, want memory_high not applied", rec.Warnings)
		}
		d.mustCtl("stop", id)
	case "v2":
		id := d.start("--memory-high", "1G", project(t), "--", "sleep", "7308")
		rec := d.inspectContained(id)
		if b, _ := os.ReadFile(rec.Cgroup.Path + "/memory.high"); strings.TrimSpace(string(b)) != strconv.Itoa(1<<30) {
			t.Errorf("memory.high is %q, want 1 GiB", b)
		}
		d.mustCtl("stop", id)
	default:
		t.Fatalf("no memory controller: %+v", c)
	}
	// A malformed limit is refused before anything is sent.
	for _, args := range [][]string{{"--memory-max", "lots"}, {"--pids-max", "1"}, {"--cpu-max", "fast"}, {"--cpu-weight", "20000"}, {"--limits", "maybe"}} {
		r := d.ctl(append(append([]string{"start"}, args...), project(t), "--", "true")...)
		if r.code == 0 || !strings.Contains(r.stderr, args[0]) {
			t.Errorf("start %v: %s, want an error naming %s", args, r, args[0])
		}
	}
}

// A full cgroup subtree (its cgroup.max.descendants reached) is a clear
// error at start, and nothing is left half-made.
func TestAFullCgroupSubtreeIsAClearErrorAtStart(t *testing.T) {
	d, c := containedDaemon(t, "")
	limit := filepath.Join(c.Path, "cgroup.max.descendants")
	if err := os.WriteFile(limit, []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(limit, []byte("max"), 0) })
	r := d.ctl("start", project(t), "--", "sleep", "1")
	if r.code == 0 || !strings.Contains(r.stderr, "cgroup") {
		t.Fatalf("start in a full subtree: %s, want an error about the cgroup", r)
	}
	if err := os.WriteFile(limit, []byte("max"), 0); err != nil {
		t.Fatal(err)
	}
	id := d.start(project(t), "--", "true")
	d.waitEnded(id, 10*time.Second)
}

// A process killed for memory while the command runs on is a warning
// (reason memory), given once, through the usual warning path.
func TestAnOOMKillInsideARunningSessionWarnsIt(t *testing.T) {
	d, c := containedDaemon(t, "")
	if c.Controllers["memory"] == "" {
		t.Fatalf("no memory controller for sessions here: %+v", c)
	}
	dir := project(t)
	id := d.start("--memory-max", "64M", dir, "--", "sh", "-c", "python3 -c '"+allocForever+"'; exec sleep 7309")
	waitFor(t, 20*time.Second, "the memory warning", func() (bool, string) {
		rec := d.inspectContained(id)
		return rec.Warning != nil && rec.Warning.Reason == "memory", fmt.Sprintf("%+v", rec.Warning)
	})
	w := waitFile(t, filepath.Join(dir, ".sessiond", "warning.json"), 5*time.Second)
	if !strings.Contains(string(w), "OOM killer") {
		t.Errorf("warning.json does not say why:\n%s", w)
	}
	if r := d.inspect(id); r.State != "warned" {
		t.Errorf("state %s, want warned", r.State)
	}
	d.mustCtl("stop", id)
	if rec := d.waitEnded(id, 10*time.Second); rec.EndReason != "interrupted" {
		t.Errorf("end reason %q: a stop asked for is an interruption, even after an OOM kill", rec.EndReason)
	}
}

// A worktree's setup is the session's first work: it runs in the
// session's cgroup, under its limits.
func TestWorktreeSetupRunsInTheSessionsCgroup(t *testing.T) {
	d, c := containedDaemon(t, "")
	r := newCkptRepo(t)
	r.write("sessiond.toml", "[session]\ncheckpoint = \"\"\nworktree_setup = [\"cat /proc/self/cgroup > setup-cgroup.txt\"]\nport_range = \"\"\n")
	r.commitAll("first")
	id := d.start("--worktree=cg", r.dir, "--", "sleep", "7311")
	wt := d.worktreeRecord(id)
	rec := d.inspectContained(id)
	if wt.Worktree == nil || rec.Cgroup == nil {
		t.Fatalf("worktree %+v, cgroup %+v", wt.Worktree, rec.Cgroup)
	}
	data, err := os.ReadFile(filepath.Join(wt.Worktree.Path, "setup-cgroup.txt"))
	base := strings.TrimPrefix(rec.Cgroup.Path, mountOf(c.Path))
	if err != nil || !strings.Contains(string(data), "0::"+base+"/cmd\n") {
		t.Errorf("the setup ran outside %s/cmd (%v):\n%s", base, err, data)
	}
	d.mustCtl("stop", id)
	d.waitEnded(id, 15*time.Second)
}

// A limit below what the command needs to start ends it at once, honestly:
// oom, with its account.
func TestALimitBelowWhatTheCommandNeedsEndsItAsOOM(t *testing.T) {
	d, c := containedDaemon(t, "")
	if c.Controllers["memory"] == "" {
		t.Fatalf("no memory controller for sessions here: %+v", c)
	}
	id := d.start("--memory-max", "2M", project(t), "--", "python3", "-c", "import json, email, http.client; print('started')")
	rec := d.waitEnded(id, 20*time.Second)
	if rec.EndReason != "oom" {
		t.Fatalf("end reason %q, want oom", rec.EndReason)
	}
	if acc := d.inspectContained(id); !strings.Contains(strings.Join(acc.Warnings, "\n"), "memory_max 2MiB") {
		t.Errorf("warnings %q, want the account naming memory_max 2MiB", acc.Warnings)
	}
}

// A user's session cannot move its processes out of its cgroup: the
// kernel refuses, and the stop still ends them.
func TestAUsersSessionCannotLeaveItsCgroup(t *testing.T) {
	u := newUser(t)
	if os.Geteuid() != 0 {
		t.Fatal("run as root")
	}
	d := rootDaemon(t, u)
	dir := u.project(t)
	v2, _ := containedRoot(t, d)
	escape := fmt.Sprintf("if echo $$ > %s/cgroup.procs 2>err.txt; then echo moved; else echo refused; fi > out.txt; exec sleep 7312", v2)
	r := u.ctl(t, d.sock, "start", "-q", dir, "--", "sh", "-c", escape)
	if r.code != 0 {
		t.Fatalf("start as %s: %s", u.name, r)
	}
	id := strings.TrimSpace(r.stdout)
	out := waitLine(t, filepath.Join(dir, "out.txt"), 10*time.Second)
	if strings.TrimSpace(string(out)) != "refused" {
		t.Fatalf("the user's process moved itself out of its cgroup: %s", out)
	}
	// The shell writes out.txt, then becomes the sleep.
	var pids []int
	waitFor(t, 10*time.Second, "the shell to become the sleep", func() (bool, string) {
		pids = procsRunning("sleep", "7312")
		return len(pids) > 0, fmt.Sprint(pids)
	})
	if len(pids) != 1 || !strings.HasSuffix(cgroupOf(t, pids[0]), "/"+id+"/cmd") {
		t.Fatalf("the sleep %v is not in its session's cgroup", pids)
	}
	d.mustCtl("stop", id)
	d.waitEnded(id, 15*time.Second)
	if left := procsRunning("sleep", "7312"); len(left) > 0 {
		t.Errorf("outlived the stop: %v", left)
	}
}

// containedRoot is the cgroup v2 mount of a root daemon's sessions.
func containedRoot(t *testing.T, d *daemon) (mount string, c containment) {
	t.Helper()
	var v struct {
		Daemon struct {
			Containment *containment `json:"containment"`
		} `json:"daemon"`
	}
	out := d.mustCtl("--json", "version")
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Daemon.Containment == nil || v.Daemon.Containment.Mode == "none" {
		t.Fatalf("version --json: %v\n%s", err, out)
	}
	c = *v.Daemon.Containment
	return mountOf(c.Path), c
}

// sessiond doctor says what the host offers and what the daemon does, and
// exits 1 when the configured limits cannot hold.
func TestDoctorSaysWhatTheHostOffers(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "sessiond.toml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	r := execute(t, cleanEnv(), sessiondBin, "doctor", "--config", cfg, "--state-dir", t.TempDir(), "--socket", filepath.Join(t.TempDir(), "none.sock"))
	if r.code != 0 || !strings.Contains(r.stdout, "cgroup v2") || !strings.Contains(r.stdout, "containment") || !strings.Contains(r.stdout, "controllers") || !strings.Contains(r.stdout, "inotify") {
		t.Fatalf("doctor: %s", r)
	}
	write("cgroups = false\n[defaults]\nmemory_max = \"1G\"\n")
	r = execute(t, cleanEnv(), sessiondBin, "doctor", "--config", cfg, "--state-dir", t.TempDir(), "--socket", filepath.Join(t.TempDir(), "none.sock"))
	if r.code != 1 || !strings.Contains(r.stdout, "containment  none") || !strings.Contains(r.stdout, "CANNOT HOLD") {
		t.Errorf("doctor with limits and no cgroups: %s", r)
	}
	write("cgroups = false\n[defaults]\nmemory_max = \"1G\"\nlimits = \"best-effort\"\n")
	r = execute(t, cleanEnv(), sessiondBin, "doctor", "--config", cfg, "--state-dir", t.TempDir(), "--socket", filepath.Join(t.TempDir(), "none.sock"))
	if r.code != 0 || !strings.Contains(r.stdout, "best-effort, without") {
		t.Errorf("doctor with best-effort limits: %s", r)
	}
	// Doctor changes nothing: the cgroup a daemon of that state dir would
	// make is not made.
	state := t.TempDir()
	write("")
	if r := execute(t, cleanEnv(), sessiondBin, "doctor", "--config", cfg, "--state-dir", state, "--socket", filepath.Join(t.TempDir(), "none.sock")); r.code != 0 {
		t.Fatalf("doctor: %s", r)
	}
	sum := sha256.Sum256([]byte(state))
	name := "sessiond-" + hex.EncodeToString(sum[:6])
	for _, m := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(m, name)); err == nil {
			t.Errorf("doctor made the cgroup %s", filepath.Join(m, name))
		}
	}
}
