package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue "project watching": files changed, the last file edited and the
// last activity, ignores, the activity event, a removed project, and file
// activity counted by the idle timeout.

// streamEvent is one line of sessionctl events -f --json.
type streamEvent struct {
	Type      string          `json:"type"`
	Time      time.Time       `json:"time"`
	SessionID string          `json:"session_id"`
	ProjectID string          `json:"project_id"`
	Message   string          `json:"message"`
	Data      json.RawMessage `json:"data"`
}

// eventTail is a running sessionctl events -f --json.
type eventTail struct {
	t   testing.TB
	out syncBuffer
}

// followEvents runs sessionctl events -f --json against d until the test
// ends, and waits until the daemon has subscribed it (a started event of a
// throwaway session is seen), so that nothing after it is missed.
func followEvents(t testing.TB, d *daemon) *eventTail {
	t.Helper()
	e := &eventTail{t: t}
	var errb syncBuffer
	cmd := exec.Command(sessionctlBin, "--socket", d.sock, "events", "-f", "--json")
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = &e.out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	// The stream has no history: prove the subscription is live with an
	// event made after it started, starting another throwaway session
	// while none shows (the first may come before the subscription).
	var probes []string
	var probed time.Time
	waitFor(t, 10*time.Second, "events -f to show a probe session", func() (bool, string) {
		select {
		case <-done:
			t.Fatalf("events -f exited early: %s", errb.String())
		default:
		}
		if len(e.find(func(ev streamEvent) bool { return slices.Contains(probes, ev.SessionID) })) > 0 {
			return true, ""
		}
		if time.Since(probed) > 300*time.Millisecond {
			probe := d.start(project(t), "--", "true")
			probes = append(probes, probe)
			probed = time.Now()
			// Its end writes into its project: wait for it before the
			// test's cleanup removes the directory.
			t.Cleanup(func() { d.with(t).waitEnded(probe, 10*time.Second) })
		}
		return false, e.out.String()
	})
	return e
}

// all parses the events printed so far.
func (e *eventTail) all() []streamEvent {
	e.t.Helper()
	var evs []streamEvent
	for _, line := range strings.Split(e.out.String(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var ev streamEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			// The last line may be half written.
			continue
		}
		evs = append(evs, ev)
	}
	return evs
}

func (e *eventTail) find(match func(streamEvent) bool) []streamEvent {
	var out []streamEvent
	for _, ev := range e.all() {
		if match(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// waitEvent waits for an event that matches and returns it.
func (e *eventTail) waitEvent(what string, timeout time.Duration, match func(streamEvent) bool) streamEvent {
	e.t.Helper()
	var got streamEvent
	waitFor(e.t, timeout, what, func() (bool, string) {
		found := e.find(match)
		if len(found) == 0 {
			return false, e.out.String()
		}
		got = found[0]
		return true, ""
	})
	return got
}

// psColumn returns the value of column name in the ps row of session id.
func psColumn(t testing.TB, table, id, name string) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	sep := regexp.MustCompile(`\s{2,}`)
	header := sep.Split(strings.TrimSpace(lines[0]), -1)
	col := slices.Index(header, name)
	if col < 0 {
		t.Fatalf("ps has no column %q:\n%s", name, table)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, id+" ") {
			continue
		}
		cells := sep.Split(strings.TrimSpace(l), -1)
		if len(cells) != len(header) {
			t.Fatalf("ps row for %s has %d cells, header %d:\n%s", id, len(cells), len(header), table)
		}
		return cells[col]
	}
	t.Fatalf("ps has no row for %s:\n%s", id, table)
	return ""
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWatchProjectActivity(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	repo := newCkptRepo(t)
	repo.write(".gitignore", "node_modules/\n")
	repo.write("sub/.gitignore", "*.tmp\n")
	repo.write("sub/kept.go", "package sub\n")
	repo.write("tracked.txt", "one\n")
	repo.write("sessiond.toml", "[watch]\nignore = [\"build/\"]\n")
	repo.commitAll("initial")
	events := followEvents(t, d)

	before := time.Now()
	id := d.start(repo.dir, "--checkpoint", "", "--stop-grace", "1s", "--", "sleep", "1000")
	if rec := d.inspect(id); rec.LastFileEdited != "" || len(rec.FilesChanged) != 0 {
		t.Errorf("before any change: last_file_edited %q, files_changed %q; want none", rec.LastFileEdited, rec.FilesChanged)
	}
	// Ignored first (by the root .gitignore, a nested one, and
	// [watch] ignore), then the tracked file, then a burst on a file
	// deep in new directories, which is the last one edited.
	repo.write("node_modules/pkg/index.js", "module.exports = 1\n")
	repo.write("sub/scratch.tmp", "scratch\n")
	repo.write("build/out/app.bin", "binary\n")
	repo.write("tracked.txt", "one\ntwo\n")
	deep := filepath.Join(repo.dir, "a", "b", "c", "f")
	cmd := exec.Command("bash", "-c", "mkdir -p a/b/c && echo > a/b/c/f")
	cmd.Dir = repo.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mkdir -p a/b/c && echo > a/b/c/f: %v\n%s", err, out)
	}
	f, err := os.OpenFile(deep, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		fmt.Fprintf(f, "write %d\n", i)
		time.Sleep(10 * time.Millisecond) // pacing a burst, not synchronisation
	}
	f.Close()

	want := []string{"a/b/c/f", "tracked.txt"}
	var rec record
	waitFor(t, 10*time.Second, "files_changed to hold the new deep file and the tracked file", func() (bool, string) {
		rec = d.inspect(id)
		return slices.Equal(rec.FilesChanged, want) && rec.LastFileEdited == "a/b/c/f", fmt.Sprintf("files_changed %q, last_file_edited %q", rec.FilesChanged, rec.LastFileEdited)
	})
	if rec.LastActivity == nil || rec.LastActivity.Before(before) || rec.LastActivity.After(time.Now()) {
		t.Errorf("last_activity %v: want set, after the start %s", rec.LastActivity, before)
	}
	// The non-JSON inspect prints the same record.
	var plain map[string]json.RawMessage
	if out := d.mustCtl("inspect", id); json.Unmarshal([]byte(out), &plain) != nil || string(plain["last_file_edited"]) != `"a/b/c/f"` {
		t.Errorf("inspect (without --json): want last_file_edited a/b/c/f\n%s", out)
	}
	if got := psColumn(t, d.mustCtl("ps"), id, "LAST ACTIVITY"); got == "-" || !strings.HasSuffix(got, " ago") {
		t.Errorf("ps LAST ACTIVITY: got %q, want a time ago", got)
	}

	// One activity event for the session, naming a file that counts, and
	// only a few for the 60 writes.
	ev := events.waitEvent("an activity event", 10*time.Second, func(ev streamEvent) bool {
		return ev.Type == "activity" && ev.SessionID == id
	})
	var data struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil || !slices.Contains(want, data.Path) {
		t.Errorf("activity event data: got %s (%v), want the path of a changed file", ev.Data, err)
	}
	n := len(events.find(func(ev streamEvent) bool { return ev.Type == "activity" && ev.SessionID == id }))
	if n < 1 || n > 3 {
		t.Errorf("activity events for 60+ writes within about a second: got %d, want 1 to 3 (rate-limited)", n)
	}
	for _, ev := range events.find(func(ev streamEvent) bool { return ev.Type == "activity" }) {
		for _, ignored := range []string{"node_modules", ".tmp", "build/"} {
			if strings.Contains(string(ev.Data), ignored) || strings.Contains(ev.Message, ignored) {
				t.Errorf("activity event about an ignored file: %+v", ev)
			}
		}
	}

	// Still exactly those files once everything settled, and in the
	// ended record too.
	d.mustCtl("stop", id)
	end := d.inspect(id)
	if !slices.Equal(end.FilesChanged, want) || end.LastFileEdited != "a/b/c/f" || end.LastActivity == nil {
		t.Errorf("ended record: files_changed %q, last_file_edited %q, last_activity %v; want %q, a/b/c/f, set",
			end.FilesChanged, end.LastFileEdited, end.LastActivity, want)
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(readProjectFile(t, repo.dir, "handoff.json"), &h); err != nil {
		t.Fatal(err)
	}
	var hFiles []string
	_ = json.Unmarshal(h["files_changed"], &hFiles)
	if !slices.Equal(hFiles, want) || string(h["last_file_edited"]) != `"a/b/c/f"` {
		t.Errorf("handoff: files_changed %s, last_file_edited %s; want %q, a/b/c/f", h["files_changed"], h["last_file_edited"], want)
	}
}

func TestWatchProjectDirRemoved(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	parent := project(t)
	dir := filepath.Join(parent, "proj")
	writeFile(t, filepath.Join(dir, "src", "main.go"), "package main\n")
	id := d.start(dir, "--stop-grace", "1s", "--", "sleep", "1000")
	pid := d.inspect(id).PID
	killOnCleanup(t, pid)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	// The watch notices the root is gone; the session must not care.
	sleepUntil(removed.Add(time.Second))
	rec := d.inspect(id)
	if rec.State != "running" || !alive(pid) {
		t.Fatalf("1s after its project was removed: state %s (%s), pid %d alive %v; want running", rec.State, rec.EndReason, pid, alive(pid))
	}
	if r := d.ctl("ps"); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Errorf("ps with a removed project: want exit 0 listing %s\n%s", id, r)
	}
	r := d.ctl("stop", id)
	if r.code != 0 {
		t.Errorf("stop of a session whose project was removed: want exit 0\n%s", r)
	}
	end := d.waitEnded(id, 10*time.Second)
	if end.State != "ended" || end.EndReason != "interrupted" {
		t.Errorf("after stop: state %s, end_reason %q; want ended, interrupted", end.State, end.EndReason)
	}
	if alive(pid) {
		t.Errorf("pid %d alive after stop", pid)
	}
	// Its account is in the state dir alone, said so in the record, with
	// no file of the gone project listed as changed.
	if !slices.ContainsFunc(end.Warnings, func(w string) bool { return strings.Contains(w, "the handoff is only in the state dir") }) {
		t.Errorf("record warnings %q: want one saying the handoff is only in the state dir", end.Warnings)
	}
	var h struct {
		SessionID    string          `json:"session_id"`
		FilesChanged []string        `json:"files_changed"`
		Features     json.RawMessage `json:"features"`
	}
	data, err := os.ReadFile(filepath.Join(d.stateDir, "sessions", id, "handoff.json"))
	if err != nil {
		t.Fatalf("the handoff's archive: %v", err)
	}
	if err := json.Unmarshal(data, &h); err != nil || h.SessionID != id || len(h.FilesChanged) != 0 {
		t.Errorf("the handoff's archive (%v): session %q, files_changed %q; want %s, none\n%s", err, h.SessionID, h.FilesChanged, id, data)
	}
	if fileExists(filepath.Join(dir, ".sessiond", "handoff.json")) {
		t.Errorf("a handoff was written into the removed project")
	}
	// The daemon goes on serving.
	d.mustCtl("ps", "-a")
	if rec := d.waitEnded(d.start(project(t), "--", "true"), 10*time.Second); rec.EndReason != "complete" {
		t.Errorf("a session after the removed project's: ended %s, want complete", rec.EndReason)
	}
}

func TestWatchIdleTimeoutCountsFileActivity(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	start := time.Now()
	id := d.start(dir, "--timeout", "30s", "--warn-before", "5s", "--idle-timeout", "1s", "--stop-grace", "1s", "--checkpoint", "", "--", "sleep", "1000")

	// Keep editing a file of the project every 200ms; the command itself
	// prints nothing.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lastTouch time.Time
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			_ = os.WriteFile(filepath.Join(dir, "work.txt"), []byte(fmt.Sprintf("edit %d\n", i)), 0o644)
			mu.Lock()
			lastTouch = time.Now()
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	stopTouching := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopTouching)

	sleepUntil(start.Add(2500 * time.Millisecond))
	if rec := d.inspect(id); rec.State != "running" {
		stopTouching()
		t.Fatalf("2.5s into a session with --idle-timeout 1s whose project is edited every 200ms: state %s (%s), want running", rec.State, rec.EndReason)
	}
	stopTouching()
	mu.Lock()
	last := lastTouch
	mu.Unlock()
	rec := d.waitEnded(id, 10*time.Second)
	if rec.EndReason != "idle" {
		t.Errorf("once the edits stopped: end_reason %q, want idle", rec.EndReason)
	}
	if rec.EndedAt == nil || rec.EndedAt.Sub(last) < 900*time.Millisecond {
		t.Errorf("ended at %v, less than the 1s idle timeout after the last edit at %s", rec.EndedAt, last)
	}
	if rec.EndedAt != nil && rec.EndedAt.Sub(last) > 6*time.Second {
		t.Errorf("ended at %s, %s after the last edit: want about 1s", rec.EndedAt, rec.EndedAt.Sub(last))
	}
}

// A session that changed no file has files_changed [] — an empty list, as
// session.json and a live record carry it — not null, once it has ended too.
func TestWatchFilesChangedIsAListWhenEnded(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start(dir, "--stop-grace", "1s", "--", "sleep", "1000")
	field := func(what, out string) string {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		return string(raw["files_changed"])
	}
	if got := field("inspect of the live session", d.mustCtl("inspect", id)); got != "[]" {
		t.Errorf("live session: files_changed %s, want []", got)
	}
	d.mustCtl("stop", id)
	_, onDisk := d.readRecordFile(id)
	if got := field("session.json", string(onDisk)); got != "[]" {
		t.Errorf("session.json of the ended session: files_changed %s, want []", got)
	}
	if got := field("inspect of the ended session", d.mustCtl("inspect", id)); got != "[]" {
		t.Errorf("inspect of the ended session: files_changed %s, want [] as in its session.json", got)
	}
	all := rawRecords(t, d.mustCtl("--json", "ps", "-a"))
	if got := string(all[id]["files_changed"]); got != "[]" {
		t.Errorf("ps -a --json of the ended session: files_changed %s, want []", got)
	}
}
