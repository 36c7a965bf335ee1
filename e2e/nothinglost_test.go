package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// spareDirs lists the spare session directories in sessionsDir.
func spareDirs(sessionsDir string) []string {
	entries, _ := os.ReadDir(sessionsDir)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".spare-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// concurrentProject is a project whose sessions may run side by side.
func concurrentProject(t *testing.T) string {
	t.Helper()
	dir := project(t)
	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\nconcurrent = true\ncheckpoint = \"\"\n")
	return dir
}

// checkEntries fails unless each of ids has exactly one progress entry
// and there are no others.
func checkEntries(t *testing.T, dir string, ids []string) {
	t.Helper()
	per, total := progressLog(dir)
	for _, id := range ids {
		if per[id] != 1 {
			t.Errorf("session %s has %d progress entries, want 1", id, per[id])
		}
	}
	if total != len(ids) {
		t.Errorf("%d progress entries, want %d", total, len(ids))
	}
}

// TestConcurrentEndsKeepEveryEntry: 200 sessions of one project stopped
// together leave 200 entries in its progress log, each once.
func TestConcurrentEndsKeepEveryEntry(t *testing.T) {
	d := startDaemon(t)
	dir := concurrentProject(t)
	r := d.ctl("start", "-q", "--count", "200", dir, "--", "sleep", "300")
	if r.code != 0 {
		t.Fatal(r)
	}
	ids := strings.Fields(r.stdout)
	if len(ids) != 200 {
		t.Fatalf("started %d sessions, want 200", len(ids))
	}
	began := time.Now()
	if r := d.ctl("stop", "--all"); r.code != 0 {
		t.Fatal(r)
	}
	t.Logf("200 ends of one project: %s", time.Since(began).Round(time.Millisecond))
	checkEntries(t, dir, ids)
	// The state the next session gets says the same.
	if r := d.ctl("state", dir); r.code != 0 || !strings.Contains(r.stdout, "Last Session") {
		t.Errorf("sessionctl state: %s", r)
	}
}

// TestConcurrentEndsAcrossACrash: the same, the daemon killed with
// SIGKILL while the ends are being written; the next daemon finishes them,
// and still each session has one entry.
func TestConcurrentEndsAcrossACrash(t *testing.T) {
	d := startDaemon(t)
	dir := concurrentProject(t)
	r := d.ctl("start", "-q", "--count", "200", dir, "--", "sleep", "300")
	if r.code != 0 {
		t.Fatal(r)
	}
	ids := strings.Fields(r.stdout)
	stopped := make(chan result, 1)
	go func() { stopped <- runCtl(t, d.sock, nil, "stop", "--all") }()
	// Kill it once some ends are on disk, not all.
	waitFor(t, 30*time.Second, "the first ends on disk", func() (bool, string) {
		per, _ := progressLog(dir)
		return len(per) >= 1, fmt.Sprint(len(per))
	})
	d.kill9()
	first := <-stopped
	per, _ := progressLog(dir)
	t.Logf("%d of 200 entries written when the daemon was killed", len(per))
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	if first.code != 0 {
		// The stop --all the crash cut short failed; a person runs it
		// again. The sessions whose stop had begun are finished by the
		// new daemon; the others (on a loaded machine, the stop may not
		// have reached them all) are stopped now.
		if r := d2.ctl("stop", "--all"); r.code != 0 {
			t.Errorf("stop --all again after the crash: %s", r)
		}
	}
	waitFor(t, 60*time.Second, "every session to end", func() (bool, string) {
		r := d2.ctl("ps", "-q")
		return r.code == 0 && strings.TrimSpace(r.stdout) == "", r.String()
	})
	checkEntries(t, dir, ids)
}

// progressLog counts, per session id, the entries of the project's
// progress log, and the entries in all (nil, 0 while there is no log).
func progressLog(dir string) (map[string]int, int) {
	b, err := os.ReadFile(filepath.Join(dir, ".sessiond", "progress.md"))
	if err != nil {
		return nil, 0
	}
	per := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Session "); ok {
			id, _, _ := strings.Cut(rest, ",")
			per[id]++
		}
	}
	return per, strings.Count(string(b), "\n## Session ")
}

// slowToStop is a command that takes two seconds to stop on SIGTERM.
const slowToStop = `trap 'sleep 2; exit 0' TERM; while :; do sleep 0.1; done`

// TestStopOutlivesACrash: a stop asked of a session with restart =
// "on-failure", the daemon killed during its grace. The next daemon
// finishes the stop as the end it was, interrupted, and does not restart
// it.
func TestStopOutlivesACrash(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--restart", "on-failure", "--stop-grace", "20s", dir, "--", "sh", "-c", slowToStop)
	pid := d.waitState(id, 10*time.Second, "running").PID
	stopped := make(chan result, 1)
	go func() { stopped <- runCtl(t, d.sock, nil, "stop", id) }()
	d.waitState(id, 10*time.Second, "stopping")
	d.kill9()
	// The stop that waited is told what became of it.
	if r := <-stopped; r.code != 1 || !strings.Contains(r.stderr, "sessiond closed the connection before it answered") {
		t.Errorf("the stop whose daemon was killed: %s", r)
	}
	// The command finishes its stop while no daemon runs.
	waitFor(t, 10*time.Second, "the command to exit", func() (bool, string) { return !alive(pid), "" })
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	rec := d2.waitEnded(id, 30*time.Second)
	if rec.EndReason != "interrupted" {
		t.Errorf("the stop interrupted by a crash ended %q, want interrupted", rec.EndReason)
	}
	time.Sleep(3 * time.Second) // past the restart policy's first delay
	for _, r := range d2.list(true) {
		if r.RestartOf == id {
			t.Errorf("session %s was restarted (as %s) after the stop asked of it", id, r.ID)
		}
	}
}

// TestStopAllOutlivesACrash: stop --all records the stops' intents in one
// journal (stops.json), not in each session's record, before their first
// signal; the daemon killed during the grace, the next one finishes each
// stop as the end it was, interrupted, once.
func TestStopAllOutlivesACrash(t *testing.T) {
	d := startDaemon(t)
	const n = 3
	ids := make([]string, n)
	pids := make([]int, n)
	dirs := make([]string, n)
	for i := range ids {
		dirs[i] = project(t)
		ids[i] = d.start("--stop-grace", "20s", dirs[i], "--", "sh", "-c", slowToStop)
	}
	for i, id := range ids {
		pids[i] = d.waitState(id, 10*time.Second, "running").PID
	}
	go runCtl(t, d.sock, nil, "stop", "--all")
	for _, id := range ids {
		d.waitState(id, 10*time.Second, "stopping")
	}
	var journal struct {
		Stops map[string]struct {
			Reason  string `json:"reason"`
			GraceMS int64  `json:"grace_ms"`
		} `json:"stops"`
	}
	data, err := os.ReadFile(filepath.Join(d.stateDir, "stops.json"))
	if err != nil || json.Unmarshal(data, &journal) != nil {
		t.Fatalf("the journal of stops: %v\n%s", err, data)
	}
	for _, id := range ids {
		if in := journal.Stops[id]; in.Reason != "interrupted" || in.GraceMS != 20000 {
			t.Errorf("the journal's intent for %s: %+v, want interrupted with a grace of 20 s", id, in)
		}
		// The record itself is written at the end.
		if rec, _ := d.readRecordFile(id); rec.State != "running" {
			t.Errorf("the record of %s on disk during its grace says %s; the journal carries the stop", id, rec.State)
		}
	}
	d.kill9()
	waitFor(t, 10*time.Second, "the commands to exit", func() (bool, string) {
		for _, pid := range pids {
			if alive(pid) {
				return false, fmt.Sprint(pid)
			}
		}
		return true, ""
	})
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	for i, id := range ids {
		if rec := d2.waitEnded(id, 30*time.Second); rec.EndReason != "interrupted" {
			t.Errorf("session %s, stopped by a stop --all a crash cut short, ended %q, want interrupted", id, rec.EndReason)
		}
		if per, _ := progressLog(dirs[i]); per[id] != 1 {
			t.Errorf("session %s has %d progress entries, want 1", id, per[id])
		}
	}
}

// TestRestartOutlivesACrash: sessionctl restart, the daemon killed while
// the old session stops. The next daemon ends the old one and starts its
// successor, once.
func TestRestartOutlivesACrash(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--stop-grace", "20s", dir, "--", "sh", "-c", slowToStop)
	d.waitState(id, 10*time.Second, "running")
	go runCtl(t, d.sock, nil, "restart", id)
	d.waitState(id, 10*time.Second, "stopping")
	d.kill9()
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	d2.waitEnded(id, 30*time.Second)
	var next []string
	waitFor(t, 30*time.Second, "the restart to start", func() (bool, string) {
		next = nil
		for _, r := range d2.list(true) {
			if r.RestartOf == id {
				next = append(next, r.ID)
			}
		}
		return len(next) > 0, fmt.Sprint(next)
	})
	time.Sleep(2 * time.Second)
	next = nil
	for _, r := range d2.list(true) {
		if r.RestartOf == id {
			next = append(next, r.ID)
		}
	}
	if len(next) != 1 {
		t.Fatalf("restarts of %s: %v, want one", id, next)
	}
	d2.waitState(next[0], 10*time.Second, "running")
}

// TestPolicyRestartOutlivesACrash: a session that ended with its restart
// policy's successor waiting out the backoff (a second), the daemon killed
// then: the next daemon starts the successor, once.
func TestPolicyRestartOutlivesACrash(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--restart", "on-failure", "--checkpoint", "", dir, "--", "sh", "-c", "sleep 0.3; exit 1")
	d.waitEnded(id, 10*time.Second)
	d.kill9()
	// The killed daemon had not started the successor: no record says so.
	recs, _ := filepath.Glob(filepath.Join(d.stateDir, "sessions", "*", "session.json"))
	for _, p := range recs {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), `"restart_of":"`+id+`"`) {
			t.Fatalf("the killed daemon had started the successor (%s): the kill came after the backoff", p)
		}
	}
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	successors := func() []string {
		var next []string
		for _, r := range d2.list(true) {
			if r.RestartOf == id {
				next = append(next, r.ID)
			}
		}
		return next
	}
	waitFor(t, 20*time.Second, "the successor to start", func() (bool, string) {
		return len(successors()) > 0, ""
	})
	sleepUntil(time.Now().Add(1500 * time.Millisecond))
	if next := successors(); len(next) != 1 {
		t.Fatalf("successors of %s: %v, want one", id, next)
	}
	d2.mustCtl("stop", id)
}

// TestRemovalOutlivesACrash: a session directory whose removal a daemon
// began (renamed aside, then deleted) is finished by the next daemon.
func TestRemovalOutlivesACrash(t *testing.T) {
	d := startDaemon(t)
	id := d.start("--wait", project(t), "--", "true")
	d.waitEnded(id, 10*time.Second)
	d.stop()
	sessions := filepath.Join(d.stateDir, "sessions")
	if err := os.Rename(filepath.Join(sessions, id), filepath.Join(sessions, ".removed-"+id)); err != nil {
		t.Fatal(err)
	}
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	if fileExists(filepath.Join(sessions, ".removed-"+id)) {
		t.Error("the half-removed session directory is still there")
	}
	if r := d2.ctl("inspect", id); r.code == 0 {
		t.Errorf("the removed session is back: %s", r)
	}
	if r := d2.ctl("rm", id); r.code == 0 {
		t.Errorf("rm of a removed session: %s", r)
	}
}

// TestSpareDirectoriesAcrossACrash: session directories are made ahead of
// need (sessions/.spare-*, each with the empty files a start writes). A
// daemon killed with spares made, and with a session directory whose
// record was never written (a spare taken just before the crash), comes
// back with its sessions, skips both without calling them unreadable,
// moves nothing aside, and starts from the spares again.
func TestSpareDirectoriesAcrossACrash(t *testing.T) {
	t.Parallel()
	stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, stateDir, sock)
	id := d.start(project(t), "--", "sleep", "100")
	sessionsDir := filepath.Join(stateDir, "sessions")
	spares := func() []string { return spareDirs(sessionsDir) }
	waitFor(t, 10*time.Second, "spare session directories", func() (bool, string) {
		s := spares()
		return len(s) > 0, fmt.Sprint(s)
	})
	files, err := os.ReadDir(filepath.Join(sessionsDir, id))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.Contains(f.Name(), ".tmp-") || strings.Contains(f.Name(), ".corrupt") {
			t.Errorf("session directory made from a spare holds %s", f.Name())
		}
	}
	d.kill9()
	// A spare taken just before the crash: its record still empty.
	taken := spares()[0]
	if err := os.Rename(filepath.Join(sessionsDir, taken), filepath.Join(sessionsDir, "zzzz9999")); err != nil {
		t.Fatal(err)
	}

	d2 := startDaemonAt(t, stateDir, sock)
	waitFor(t, 10*time.Second, "the recovery summary", func() (bool, string) {
		data, _ := os.ReadFile(d2.logPath)
		return strings.Contains(string(data), `"skipped_unreadable"`), string(data)
	})
	logData, _ := os.ReadFile(d2.logPath)
	if !strings.Contains(string(logData), `"skipped_unreadable":0`) {
		t.Errorf("recovery counted unreadable records:\n%s", logData)
	}
	if rec := d2.inspect(id); rec.State != "running" {
		t.Errorf("the session after the crash: %s, want running (adopted)", rec.State)
	}
	if out := d2.mustCtl("ps", "-a", "-q"); strings.TrimSpace(out) != id {
		t.Errorf("ps -a -q after the crash = %q, want %s alone", out, id)
	}
	// Nothing of a session in it (its record and log empty: the start
	// was never answered, its command never ran): removed, not set aside.
	if _, err := os.Stat(filepath.Join(sessionsDir, "zzzz9999")); !os.IsNotExist(err) {
		t.Errorf("the directory of the start that never got its record is still there: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(sessionsDir, "*", "*corrupt*")); len(m) > 0 {
		t.Errorf("set aside as corrupt: %v", m)
	}
	second := d2.start(project(t), "--", "sleep", "100")
	if rec := d2.inspect(second); rec.State != "running" {
		t.Errorf("a start after the crash: %s", rec.State)
	}
	d2.mustCtl("stop", id, second)
}

// TestQueuedSessionsTakeSpares: a queued session's directory is a spare,
// as a start's is, and when it starts the spares stay as they are (none
// taken over a directory that is there, none thrown away).
func TestQueuedSessionsTakeSpares(t *testing.T) {
	t.Parallel()
	stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, stateDir, sock)
	sessionsDir := filepath.Join(stateDir, "sessions")
	spares := func() []string { return spareDirs(sessionsDir) }
	dir := project(t)
	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\nconcurrent = true\n")
	gate := filepath.Join(t.TempDir(), "go")
	first := d.start(dir, "--", "sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.1; done")
	waitFor(t, 10*time.Second, "four spare session directories", func() (bool, string) {
		s := spares()
		return len(s) == 4, fmt.Sprint(s)
	})
	queued := d.start("--after-any", first, dir, "--", "true")
	// Made from a spare: the log a spare holds is there before the
	// session ever ran.
	if fi, err := os.Lstat(filepath.Join(sessionsDir, queued, "output.log")); err != nil || fi.Size() != 0 {
		t.Fatalf("the queued session's directory was not a spare: output.log %v, %v", fi, err)
	}
	waitFor(t, 10*time.Second, "the spares made again", func() (bool, string) {
		s := spares()
		return len(s) == 4, fmt.Sprint(s)
	})
	before := spares()
	writeFile(t, gate, "")
	if end := d.waitEnded(queued, 20*time.Second); end.EndReason != "complete" {
		t.Fatalf("the queued session ended %q", end.EndReason)
	}
	time.Sleep(100 * time.Millisecond) // past the refill's quiet time
	if after := spares(); !slices.Equal(after, before) {
		t.Errorf("spares %v after the queued session started, want %v as they were", after, before)
	}
}

// TestARecordsLastWriteOutlivesALostExchange: a record's write is synced
// once, its exchange with its spare not. A crash of the machine that lost
// the exchange (the names as they were before the write, made here by
// hand after a SIGKILL) leaves the answered write under the spare's name,
// and the next daemon takes it: the report it answered is there, and the
// session's next write keeps it.
func TestARecordsLastWriteOutlivesALostExchange(t *testing.T) {
	d := startDaemon(t)
	id := d.start(project(t), "--", "sleep", "300")
	d.waitState(id, 10*time.Second, "running")
	d.mustCtl("report", "--session", id, "--summary", "the answered report")
	d.kill9()
	dir := filepath.Join(d.stateDir, "sessions", id)
	rec, spare := filepath.Join(dir, "session.json"), filepath.Join(dir, ".session.json.spare")
	for _, mv := range [][2]string{{rec, rec + ".x"}, {spare, rec}, {rec + ".x", spare}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(readFile(t, rec), "the answered report") {
		t.Fatal("the names were not put back: session.json holds the report")
	}
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	type reported struct {
		Seq    uint64 `json:"seq"`
		Report *struct {
			Summary string `json:"summary"`
		} `json:"report"`
	}
	inspect := func() reported {
		var r reported
		if err := json.Unmarshal([]byte(d2.mustCtl("--json", "inspect", id)), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := inspect(); r.Report == nil || r.Report.Summary != "the answered report" {
		t.Fatalf("after the lost exchange the record's report is %+v, want the answered one", r.Report)
	}
	d2.mustCtl("report", "--session", id, "--summary", "the next report")
	d2.mustCtl("stop", id)
	d2.waitEnded(id, 15*time.Second)
	if r := inspect(); r.Report == nil || r.Report.Summary != "the next report" {
		t.Errorf("after the next writes the report is %+v, want the next one", r.Report)
	}
}

// TestAnAnsweredStartOutlivesTheMachine: a start is answered once the
// session's first record is synced; the running record's own sync follows
// the answer. A machine that goes down before that sync (made here by
// hand after a SIGKILL: the session's processes killed, the running
// record's exchange with its spare undone and its content lost, the boot
// another) leaves the starting record, and the next daemon ends the
// session host_rebooted with its handoff and progress entry, as it ends
// one whose running record was on disk.
func TestAnAnsweredStartOutlivesTheMachine(t *testing.T) {
	t.Parallel()
	stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, stateDir, sock)
	dir := project(t)
	id := d.start(dir, "--", "sleep", "300")
	pid := d.inspect(id).PID
	d.kill9()
	_ = syscallKill(-pid)
	waitFor(t, 10*time.Second, "the session's processes to be gone", func() (bool, string) {
		return !alive(pid), "still there"
	})
	sdir := filepath.Join(stateDir, "sessions", id)
	rec, spare := filepath.Join(sdir, "session.json"), filepath.Join(sdir, ".session.json.spare")
	var first map[string]any
	if err := json.Unmarshal([]byte(readFile(t, spare)), &first); err != nil || first["state"] != "starting" {
		t.Fatalf("the spare holds %v (%v), want the starting record", first, err)
	}
	// The exchange undone, the running record's content lost.
	if err := os.Rename(spare, rec+".x"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(rec, spare); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(spare, 0); err != nil {
		t.Fatal(err)
	}
	first["boot_id"] = "00000000-0000-4000-8000-000000000001"
	b, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec+".x", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(rec+".x", rec); err != nil {
		t.Fatal(err)
	}

	d2 := startDaemonAt(t, stateDir, sock)
	end := d2.waitEnded(id, 20*time.Second)
	if end.EndReason != "host_rebooted" {
		t.Fatalf("the session ended %q, want host_rebooted", end.EndReason)
	}
	handoff := readFile(t, filepath.Join(dir, ".sessiond", "handoff.json"))
	if !strings.Contains(handoff, `"session_id": "`+id+`"`) || !strings.Contains(handoff, `"end_reason": "host_rebooted"`) {
		t.Errorf("the handoff:\n%s", handoff)
	}
	if progress := readFile(t, filepath.Join(dir, ".sessiond", "progress.md")); strings.Count(progress, id) != 1 {
		t.Errorf("the progress log names the session %d times, want once:\n%s", strings.Count(progress, id), progress)
	}
	if alive(pid) {
		t.Errorf("pid %d is alive", pid)
	}
}

// TestEndArchivesIntoTheSpare: the handoff's archive in the session's
// directory is written into the spare made ahead, not a new file: the one
// a spare directory brings, or, for a directory made when none was ready
// (a batch that used them up), the one made once starts pause.
func TestEndArchivesIntoTheSpare(t *testing.T) {
	t.Parallel()
	stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, stateDir, sock)
	sessions := filepath.Join(stateDir, "sessions")
	waitFor(t, 10*time.Second, "spare session directories", func() (bool, string) {
		s := spareDirs(sessions)
		return len(s) > 0, fmt.Sprint(s)
	})
	archived := func(t *testing.T, id string) {
		t.Helper()
		dir := filepath.Join(sessions, id)
		var spare os.FileInfo
		waitFor(t, 10*time.Second, "the spare of the session's archive", func() (bool, string) {
			var err error
			spare, err = os.Lstat(filepath.Join(dir, ".handoff.json.spare"))
			return err == nil, fmt.Sprint(err)
		})
		d.mustCtl("stop", id)
		d.waitEnded(id, 10*time.Second)
		archive, err := os.Lstat(filepath.Join(dir, "handoff.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(spare, archive) {
			t.Errorf("the archive is a new file, not the spare written into")
		}
		var h struct {
			SessionID string `json:"session_id"`
		}
		if data, err := os.ReadFile(filepath.Join(dir, "handoff.json")); err != nil || json.Unmarshal(data, &h) != nil || h.SessionID != id {
			t.Errorf("the archive (%v): %s", err, data)
		}
		files, _ := os.ReadDir(dir)
		for _, f := range files {
			if strings.HasPrefix(f.Name(), ".handoff.json") {
				t.Errorf("left beside the archive: %s", f.Name())
			}
		}
	}
	t.Run("a spare directory", func(t *testing.T) {
		id := d.start(project(t), "--", "sleep", "1000")
		if _, err := os.Lstat(filepath.Join(sessions, id, ".handoff.json.spare")); err != nil {
			t.Fatalf("a session's directory taken from the spares has no spare for its archive: %v", err)
		}
		archived(t, id)
	})
	t.Run("a directory made", func(t *testing.T) {
		for _, s := range spareDirs(sessions) {
			if err := os.RemoveAll(filepath.Join(sessions, s)); err != nil {
				t.Fatal(err)
			}
		}
		id := d.start(project(t), "--", "sleep", "1000")
		archived(t, id)
	})
}

// TestEndWritesIntoTheProjectsSpares: a session's start makes ready, in
// its project's .sessiond, the files its end writes into, so that the end
// makes no inode: in a new project, the handoff, the session state and the
// progress log the end leaves are those files, and nothing is left beside
// them.
func TestEndWritesIntoTheProjectsSpares(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start(dir, "--", "sleep", "1000")
	sd := filepath.Join(dir, ".sessiond")
	names := []string{"handoff.json", "session_state.json", "progress.md"}
	spares := map[string]os.FileInfo{}
	waitFor(t, 10*time.Second, "the end's files made ready", func() (bool, string) {
		for _, n := range names {
			fi, err := os.Lstat(filepath.Join(sd, "."+n+".spare"))
			if err != nil {
				return false, err.Error()
			}
			spares[n] = fi
		}
		return true, ""
	})
	d.mustCtl("stop", id)
	d.waitEnded(id, 10*time.Second)
	for _, n := range names {
		fi, err := os.Lstat(filepath.Join(sd, n))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(spares[n], fi) {
			t.Errorf("%s is a new file, not the one made ready at the start", n)
		}
		if _, err := os.Lstat(filepath.Join(sd, "."+n+".spare")); !os.IsNotExist(err) {
			t.Errorf("a spare left beside %s: %v", n, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(sd, "session.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock outlived the end: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(sd, ".session.lock.spare")); err != nil {
		t.Errorf("the lock is not kept as the next one's spare: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(sd, "progress.md")); err != nil || !strings.Contains(string(data), id) {
		t.Errorf("progress.md (%v):\n%s", err, data)
	}
	if data, err := os.ReadFile(filepath.Join(sd, "handoff.json")); err != nil || !strings.Contains(string(data), id) {
		t.Errorf("handoff.json (%v):\n%s", err, data)
	}
}

// TestUnreadableRecordKillsNothing: a live session whose record is found
// unreadable after a crash is not killed. With its first, starting record
// as the previous version, the next daemon finds its process again through
// the project's lock and adopts it; with both versions unreadable, its
// process (and cgroup) are left running, unsupervised, and said so.
func TestUnreadableRecordKillsNothing(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--checkpoint", "", dir, "--", "sleep", "7361")
	rec := d.waitState(id, 10*time.Second, "running")
	// What the test leaves running, it ends: the process, then the
	// cgroup the daemon left with it, and the daemon's own.
	if cg := d.inspectContained(id).Cgroup; cg != nil {
		t.Cleanup(func() {
			_ = syscall.Kill(rec.PID, syscall.SIGKILL)
			waitFor(t, 5*time.Second, "the left process to be gone", func() (bool, string) { return !alive(rec.PID), "" })
			for _, p := range []string{cg.Path + "/cmd", cg.Path, filepath.Dir(cg.Path)} {
				_ = syscall.Rmdir(p)
			}
			for _, p := range cg.V1 {
				_ = syscall.Rmdir(p)
			}
		})
	}
	d.kill9()
	recPath := filepath.Join(d.stateDir, "sessions", id, "session.json")
	if err := os.WriteFile(recPath, []byte("garbage\x00\xff{{{"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = startDaemonAt(t, d.stateDir, d.sock)
	if got := d.waitState(id, 10*time.Second, "running"); got.PID != rec.PID {
		t.Errorf("the session after its record was unreadable: %s, pid %d; want it adopted, pid %d", got.State, got.PID, rec.PID)
	}
	if procs := procsRunning("sleep", "7361"); len(procs) != 1 || procs[0] != rec.PID {
		t.Fatalf("the session's process: %v, want %d alive", procs, rec.PID)
	}

	d.kill9()
	for _, p := range []string{recPath, filepath.Join(filepath.Dir(recPath), ".session.json.spare")} {
		if err := os.WriteFile(p, []byte("yy"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d = startDaemonAt(t, d.stateDir, d.sock)
	if log := readFile(t, d.logPath); !strings.Contains(log, "skipping unreadable session record") {
		t.Errorf("the daemon does not say it skipped the record:\n%s", log)
	}
	if procs := procsRunning("sleep", "7361"); len(procs) != 1 {
		t.Errorf("the process of a session whose record is unreadable was killed: %v", procs)
	}
}
