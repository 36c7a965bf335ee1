package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The reaper lives as long as the process, as children do.
		goleak.IgnoreTopFunction("github.com/sessiond/sessiond/daemon/proc.reapLoop"),
		goleak.IgnoreTopFunction("github.com/sessiond/sessiond/daemon/proc.(*spawner).serve"),
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.IgnoreAnyFunction("os/signal.loop"),
	)
}

// harness is a daemon running in the test process on a real socket.
type harness struct {
	t      testing.TB
	cfg    *config.Config
	client *ipc.Client
	stop   func()
	// clock is the daemon's, when the test moves it (startClocked).
	clock *session.FakeClock
}

func start(t testing.TB, tweak func(*config.Config)) *harness {
	t.Helper()
	return startOn(t, tweak, nil)
}

// startClocked starts a daemon whose clock the test moves.
func startClocked(t testing.TB, tweak func(*config.Config)) *harness {
	t.Helper()
	return startOn(t, tweak, session.NewFakeClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)))
}

func startOn(t testing.TB, tweak func(*config.Config), clock *session.FakeClock) *harness {
	t.Helper()
	cfg := configfile.Default()
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	sockDir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	cfg.Socket = filepath.Join(sockDir, "s.sock")
	cfg.Defaults.Checkpoint = ""
	if tweak != nil {
		tweak(cfg)
	}
	h := run(t, cfg, clock)
	h.clock = clock
	return h
}

func run(t testing.TB, cfg *config.Config, clock *session.FakeClock) *harness {
	t.Helper()
	ready := make(chan struct{})
	opt := Options{Config: cfg, Log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), Version: "test", Ready: func() { close(ready) }}
	if clock != nil {
		opt.Clock = clock
	}
	d, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("daemon not ready after 10s")
	}
	h := &harness{t: t, cfg: cfg, client: &ipc.Client{Socket: cfg.Socket}}
	// The cgroup the daemon made for its sessions, if it made one.
	var base string
	if v, err := h.client.Version(context.Background()); err != nil {
		t.Fatal(err)
	} else if c := v.Containment; c != nil && c.Mode == cgroup.Cgroupfs {
		base = c.Path
	}
	stopped := false
	h.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon Run: %v", err)
		}
		// Its sessions' cgroups and its own went with it.
		if _, err := os.Stat(base); base != "" && err == nil {
			t.Errorf("the stopped daemon left its cgroup %s", base)
		}
	}
	t.Cleanup(h.stop)
	return h
}

func (h *harness) start(dir string, req ipc.StartRequest) ipc.Session {
	h.t.Helper()
	req.Dir = dir
	resp, err := h.client.Start(context.Background(), req)
	if err != nil {
		h.t.Fatalf("start: %v", err)
	}
	return resp.Session
}

// waitState waits until the session is in one of the states.
func (h *harness) waitState(id string, states ...string) ipc.Session {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rec, err := h.client.Session(context.Background(), id)
		if err != nil {
			h.t.Fatalf("session %s: %v", id, err)
		}
		for _, s := range states {
			if rec.State == s {
				return *rec
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("session %s is %s, want %v", id, rec.State, states)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// advanceUntil moves the daemon's clock by step until cond holds; the
// sessions' real processes run between the steps.
func (h *harness) advanceUntil(step time.Duration, what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("the clock at %v: no %s", h.clock.Now(), what)
		}
		h.clock.Advance(step)
		runtime.Gosched()
	}
}

func project(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLifecycleComplete(t *testing.T) {
	h := start(t, nil)
	dir := project(t)
	s := h.start(dir, ipc.StartRequest{Command: []string{"sh", "-c", "echo out; echo err >&2"}})
	// A command this short may have ended by the time the answer is made:
	// running, or already on its way to its end, with its pid.
	if s.State != ipc.StateRunning && s.State != ipc.StateStopping && s.State != ipc.StateEnded || s.PID == 0 {
		t.Fatalf("started record = %s pid %d, want running (or ending) with a pid", s.State, s.PID)
	}
	rec := h.waitState(s.ID, ipc.StateEnded)
	if rec.EndReason != ipc.EndComplete || rec.ExitCode == nil || *rec.ExitCode != 0 {
		t.Errorf("end = %s exit %v, want complete exit 0", rec.EndReason, rec.ExitCode)
	}
	var disk ipc.Session
	if err := state.ReadJSON(filepath.Join(h.cfg.StateDir, "sessions", s.ID, "session.json"), &disk); err != nil {
		t.Fatal(err)
	}
	if disk.State != ipc.StateEnded || disk.EndedAt == nil {
		t.Errorf("record on disk = %s ended_at %v, want ended", disk.State, disk.EndedAt)
	}
	rc, err := h.client.Logs(context.Background(), s.ID, ipc.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(rc)
	rc.Close()
	if got := string(out); !strings.Contains(got, "out\n") || !strings.Contains(got, "err\n") {
		t.Errorf("log = %q, want stdout and stderr", got)
	}
	if _, err := os.Stat(state.HandoffPath(dir)); err != nil {
		t.Errorf("handoff: %v", err)
	}
}

// TestLifecycleInRepository: a session in a git repository, whose watch
// takes over git's view of the ignore rules begun with the start: the
// change it sees is the one the rules let through, and context.md holds
// the repository's log.
func TestLifecycleInRepository(t *testing.T) {
	h := start(t, nil)
	dir := project(t)
	for _, f := range []string{"src/main.go", "build/out.o"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("build/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "the first commit"}} {
		// Through proc, as every process of this test binary: the
		// daemon's reaper shares its children.
		var out strings.Builder
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := proc.Run(cmd); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out.String())
		}
	}
	s := h.start(dir, ipc.StartRequest{Command: []string{"sh", "-c", "echo y > build/out.o; echo y > src/main.go; sleep 100"}})
	deadline := time.Now().Add(15 * time.Second)
	for {
		rec, err := h.client.Session(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.FilesChanged) > 0 {
			if !slices.Equal(rec.FilesChanged, []string{"src/main.go"}) {
				t.Errorf("files changed %q, want [src/main.go] (build/ is ignored)", rec.FilesChanged)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no change seen: %+v", rec)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, err := os.ReadFile(filepath.Join(dir, ".sessiond", "context.md"))
	if err != nil || !strings.Contains(string(ctx), "the first commit") {
		t.Errorf("context.md (%v) does not hold the repository's log:\n%s", err, ctx)
	}
	if _, err := h.client.Stop(context.Background(), s.ID, ipc.StopRequest{}); err != nil {
		t.Fatal(err)
	}
}

func TestLifecycleError(t *testing.T) {
	h := start(t, nil)
	s := h.start(project(t), ipc.StartRequest{Command: []string{"sh", "-c", "exit 3"}})
	rec := h.waitState(s.ID, ipc.StateEnded)
	if rec.EndReason != ipc.EndError || rec.ExitCode == nil || *rec.ExitCode != 3 {
		t.Errorf("end = %s exit %v, want error exit 3", rec.EndReason, rec.ExitCode)
	}
}

func TestStopWritesEndBeforeReturning(t *testing.T) {
	h := start(t, nil)
	dir := project(t)
	s := h.start(dir, ipc.StartRequest{Command: []string{"sleep", "100"}})
	rec, err := h.client.Stop(context.Background(), s.ID, ipc.StopRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != ipc.StateEnded || rec.EndReason != ipc.EndInterrupted || rec.Signal != "SIGTERM" {
		t.Errorf("stopped = %s/%s/%s, want ended/interrupted/SIGTERM", rec.State, rec.EndReason, rec.Signal)
	}
	h2, err := state.LoadHandoff(state.HandoffPath(dir))
	if err != nil {
		t.Fatalf("handoff not on disk when stop returned: %v", err)
	}
	if h2.SessionID != s.ID || h2.EndReason != ipc.EndInterrupted {
		t.Errorf("handoff = %s/%s", h2.SessionID, h2.EndReason)
	}
	if _, err := state.ReadLock(dir); err == nil {
		t.Error("session.lock left behind after the end")
	}
}

func TestOneLiveSessionPerProject(t *testing.T) {
	h := start(t, nil)
	dir := project(t)
	h.start(dir, ipc.StartRequest{Command: []string{"sleep", "100"}})
	_, err := h.client.Start(context.Background(), ipc.StartRequest{Dir: dir, Command: []string{"sleep", "1"}})
	if !errors.Is(err, ipc.ErrConflict) {
		t.Errorf("second start: err = %v, want conflict", err)
	}
}

func TestStartBadInput(t *testing.T) {
	h := start(t, nil)
	file := filepath.Join(project(t), "f")
	os.WriteFile(file, nil, 0o600)
	tests := []struct {
		name string
		req  ipc.StartRequest
		msg  string
	}{
		{"missing dir", ipc.StartRequest{Dir: "/nonexistent/x", Command: []string{"true"}}, "does not exist or is not accessible"},
		{"relative dir", ipc.StartRequest{Dir: "x", Command: []string{"true"}}, "not an absolute path"},
		// One message whatever the reason, so that it tells nobody about
		// paths they cannot list.
		{"file", ipc.StartRequest{Dir: file, Command: []string{"true"}}, "does not exist or is not accessible"},
		{"no command", ipc.StartRequest{Dir: project(t)}, "no command"},
		{"not found", ipc.StartRequest{Dir: project(t), Command: []string{"no-such-command-x"}}, "not found"},
		{"bad signal", ipc.StartRequest{Dir: project(t), Command: []string{"true"}, StopSignal: "SIGNOPE"}, "unknown signal"},
		{"zero timeout", ipc.StartRequest{Dir: project(t), Command: []string{"true"}, Timeout: "0s"}, "positive"},
		{"warn after timeout", ipc.StartRequest{Dir: project(t), Command: []string{"true"}, Timeout: "1m", WarnBefore: "2m"}, "not shorter than timeout"},
		{"bad checkpoint", ipc.StartRequest{Dir: project(t), Command: []string{"true"}, Checkpoint: ptr("* *")}, "invalid schedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.client.Start(context.Background(), tt.req)
			if !errors.Is(err, ipc.ErrBadRequest) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want a bad request saying %q", err, tt.msg)
			}
		})
	}
	if hl, err := h.client.Health(context.Background()); err != nil || hl.Live != 0 {
		t.Errorf("health after bad starts = %+v, %v", hl, err)
	}
}

func TestWarningAndTimeout(t *testing.T) {
	h := start(t, nil)
	dir := project(t)
	marker := filepath.Join(dir, "got-usr2")
	script := "trap 'touch " + marker + "' USR2; while :; do sleep 0.05; done"
	s := h.start(dir, ipc.StartRequest{Command: []string{"bash", "-c", script}, Timeout: "2s", WarnBefore: "1500ms", WarnSignal: "USR2", StopGrace: "1s"})
	rec := h.waitState(s.ID, ipc.StateWarned)
	// The state turns warned, then the file is written, then the signal
	// goes out: the file is there before the signal is recorded.
	deadline := time.Now().Add(5 * time.Second)
	for (rec.Warning == nil || len(rec.Warning.Signaled) == 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		r, err := h.client.Session(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		rec = *r
	}
	if _, err := os.Stat(state.WarningPath(dir)); err != nil && rec.State == ipc.StateWarned {
		t.Errorf("warning.json, with the signal given: %v", err)
	}
	if rec.Warning == nil || len(rec.Warning.Signaled) == 0 || rec.Warning.Signaled[0] != s.PID {
		t.Errorf("warning = %+v, want the leader signalled", rec.Warning)
	}
	rec = h.waitState(s.ID, ipc.StateEnded)
	if rec.EndReason != ipc.EndTimeout {
		t.Errorf("end = %s, want timeout", rec.EndReason)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the trapping child did not get SIGUSR2: %v", err)
	}
}

func TestNoWarnSignalByDefault(t *testing.T) {
	h := start(t, nil)
	dir := project(t)
	// sleep catches nothing: a USR2 would kill it before the deadline.
	s := h.start(dir, ipc.StartRequest{Command: []string{"sleep", "100"}, Timeout: "1500ms", WarnBefore: "1s", StopGrace: "1s"})
	rec := h.waitState(s.ID, ipc.StateWarned)
	if rec.Warning == nil || rec.Warning.Signal != "" || len(rec.Warning.Signaled) != 0 {
		t.Errorf("warning = %+v, want no signal", rec.Warning)
	}
	rec = h.waitState(s.ID, ipc.StateEnded)
	if rec.EndReason != ipc.EndTimeout || rec.Signal != "SIGTERM" {
		t.Errorf("end = %s/%s, want timeout by SIGTERM (alive until the deadline)", rec.EndReason, rec.Signal)
	}
}

func TestExtend(t *testing.T) {
	h := startClocked(t, nil)
	s := h.start(project(t), ipc.StartRequest{Command: []string{"sleep", "100"}, Timeout: "1m", WarnBefore: "30s"})
	h.clock.Advance(30 * time.Second)
	h.waitState(s.ID, ipc.StateWarned)
	rec, err := h.client.Extend(context.Background(), s.ID, "3m")
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != ipc.StateRunning || !rec.Deadline.Equal(s.Deadline.Add(3*time.Minute)) {
		t.Errorf("after extend: state %s deadline %v (was %v)", rec.State, rec.Deadline, s.Deadline)
	}
	h.clock.Advance(31 * time.Second) // past the old deadline
	if now, _ := h.client.Session(context.Background(), s.ID); now.State != ipc.StateRunning {
		t.Errorf("session is %s (%s) at its old deadline, want running", now.State, now.EndReason)
	}
	h.clock.Advance(150 * time.Second) // the new warning
	h.waitState(s.ID, ipc.StateWarned)
	if _, err := h.client.Stop(context.Background(), s.ID, ipc.StopRequest{Grace: "0s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Extend(context.Background(), s.ID, "1h"); !errors.Is(err, ipc.ErrConflict) {
		t.Errorf("extend of an ended session: %v, want conflict", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	h := start(t, nil)
	quiet := h.start(project(t), ipc.StartRequest{Command: []string{"sleep", "100"}, IdleTimeout: "700ms"})
	chatty := h.start(project(t), ipc.StartRequest{Command: []string{"sh", "-c", "while :; do echo tick; sleep 0.1; done"}, IdleTimeout: "700ms"})
	rec := h.waitState(quiet.ID, ipc.StateEnded)
	if rec.EndReason != ipc.EndIdle {
		t.Errorf("quiet session end = %s, want idle", rec.EndReason)
	}
	time.Sleep(800 * time.Millisecond)
	if c, _ := h.client.Session(context.Background(), chatty.ID); !ipc.Live(c.State) {
		t.Errorf("chatty session ended (%s) although it writes output", c.EndReason)
	}
}

func TestReportFromOutsideRefused(t *testing.T) {
	h := start(t, nil)
	if os.Geteuid() == 0 {
		// Root may report for anyone; check the membership rule through a
		// session whose own child reports instead.
		dir := project(t)
		s := h.start(dir, ipc.StartRequest{Command: []string{"sleep", "100"}})
		p := 50.0
		if _, err := h.client.Report(context.Background(), s.ID, ipc.Report{Summary: "did things", Progress: &p, Next: []string{"a", "b"}}); err != nil {
			t.Fatal(err)
		}
		rec, _ := h.client.Session(context.Background(), s.ID)
		if rec.Report == nil || rec.Report.Summary != "did things" || len(rec.Report.Next) != 2 {
			t.Errorf("report = %+v", rec.Report)
		}
		bad := 150.0
		if _, err := h.client.Report(context.Background(), s.ID, ipc.Report{Progress: &bad}); !errors.Is(err, ipc.ErrBadRequest) {
			t.Errorf("progress 150: %v, want bad request", err)
		}
		return
	}
	s := h.start(project(t), ipc.StartRequest{Command: []string{"sleep", "100"}})
	if _, err := h.client.Report(context.Background(), s.ID, ipc.Report{Summary: "x"}); !errors.Is(err, ipc.ErrForbidden) {
		t.Errorf("report from outside: %v, want forbidden", err)
	}
}

func TestRestartKeepsRecordsAndRecoversCrashed(t *testing.T) {
	h := start(t, nil)
	done := h.start(project(t), ipc.StartRequest{Command: []string{"true"}})
	h.waitState(done.ID, ipc.StateEnded)
	h.stop()

	// A record left live by a daemon that died, whose process is gone.
	dir := project(t)
	// The daemon's reaper runs in this process: commands go through proc.
	gone := exec.Command("true")
	if err := proc.Run(gone); err != nil {
		t.Fatal(err)
	}
	crashed := ipc.Session{ID: "crash123", ProjectDir: dir, ProjectID: ipc.ProjectID(dir), Command: []string{"agent"},
		State: ipc.StateRunning, PID: gone.Process.Pid, StartedAt: time.Now().Add(-time.Minute), UID: os.Geteuid(),
		Deadline: time.Now().Add(time.Hour), WarnAt: time.Now().Add(30 * time.Minute), Spec: &h.cfg.Defaults}
	if err := state.EnsureDir(filepath.Join(h.cfg.StateDir, "sessions", crashed.ID)); err != nil {
		t.Fatal(err)
	}
	if err := state.WriteJSON(filepath.Join(h.cfg.StateDir, "sessions", crashed.ID, "session.json"), crashed); err != nil {
		t.Fatal(err)
	}
	h2 := run(t, h.cfg, nil)
	list, err := h2.client.Sessions(context.Background(), ipc.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ipc.Session{}
	for _, s := range list {
		byID[s.ID] = s
	}
	if r, ok := byID[done.ID]; !ok || r.EndReason != ipc.EndComplete {
		t.Errorf("ended session after restart = %+v, %v", r, ok)
	}
	r := byID["crash123"]
	if r.State != ipc.StateEnded || r.EndReason != ipc.EndCrashed || r.ExitCode != nil {
		t.Errorf("crashed session = %s/%s exit %v, want ended/crashed/unknown", r.State, r.EndReason, r.ExitCode)
	}
	hf, err := state.LoadHandoff(state.HandoffPath(dir))
	if err != nil || hf.EndReason != ipc.EndCrashed {
		t.Fatalf("crash handoff = %+v, %v", hf, err)
	}
	b, _ := json.Marshal(hf.Warnings)
	if !strings.Contains(string(b), "not observed") {
		t.Errorf("crash handoff warnings = %s", b)
	}
}

func TestRestartOnFailure(t *testing.T) {
	h := startClocked(t, func(c *config.Config) { c.Defaults.MaxRestarts = 2 })
	dir := project(t)
	first := h.start(dir, ipc.StartRequest{Command: []string{"sh", "-c", "exit 1"}, Restart: "on-failure"})
	chain := func() []ipc.Session {
		list, err := h.client.Sessions(context.Background(), ipc.ListOptions{All: true, Chains: true, Project: dir})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	var list []ipc.Session
	h.advanceUntil(100*time.Millisecond, "first and 2 restarts, ended", func() bool {
		list = chain()
		return len(list) == 3 && !ipc.Live(list[2].State)
	})
	if list[0].ID != first.ID || list[1].RestartOf != first.ID || list[2].RestartOf != list[1].ID {
		t.Errorf("restart chain = %s <- %s <- %s", list[0].ID, list[1].RestartOf, list[2].RestartOf)
	}
	if list[1].Restarts != 1 || list[2].Restarts != 2 {
		t.Errorf("restarts = %d, %d; want 1, 2", list[1].Restarts, list[2].Restarts)
	}
	if gap := list[1].StartedAt.Sub(*list[0].EndedAt); gap < time.Second {
		t.Errorf("first restart came %v after the end, want the 1s backoff", gap)
	}
	if gap := list[2].StartedAt.Sub(*list[1].EndedAt); gap < 2*time.Second {
		t.Errorf("second restart came %v after the end, want the 2s backoff", gap)
	}
	// No fourth: max_restarts reached.
	h.clock.Advance(time.Minute)
	if list = chain(); len(list) != 3 {
		t.Errorf("got %d sessions after the limit, want 3", len(list))
	}
	// Without chains, the chain is one row: its latest, with the count.
	if rows, _ := h.client.Sessions(context.Background(), ipc.ListOptions{All: true, Project: dir}); len(rows) != 1 || rows[0].ID != list[2].ID || rows[0].Restarts != 2 {
		t.Errorf("listing without chains = %+v, want one row, the latest with 2 restarts", rows)
	}
}

func TestStopIsNotRestarted(t *testing.T) {
	h := startClocked(t, nil)
	dir := project(t)
	s := h.start(dir, ipc.StartRequest{Command: []string{"sleep", "100"}, Restart: "always"})
	if _, err := h.client.Stop(context.Background(), s.ID, ipc.StopRequest{}); err != nil {
		t.Fatal(err)
	}
	// Any restart armed would be launched by the time this returns.
	h.clock.Advance(time.Hour)
	if list, _ := h.client.Sessions(context.Background(), ipc.ListOptions{All: true, Project: dir}); len(list) != 1 {
		t.Errorf("got %d sessions, want no restart after an explicit stop", len(list))
	}
}

func TestPreflight(t *testing.T) {
	h := start(t, nil)
	dir := project(t)
	os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte("[session]\npreflight = [\"test -f ready\"]\n"), 0o600)
	_, err := h.client.Start(context.Background(), ipc.StartRequest{Dir: dir, Command: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "preflight") {
		t.Fatalf("start without the ready file: %v, want a preflight failure", err)
	}
	os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600)
	s := h.start(dir, ipc.StartRequest{Command: []string{"true"}})
	if rec := h.waitState(s.ID, ipc.StateEnded); rec.EndReason != ipc.EndComplete {
		t.Errorf("end = %s, want complete", rec.EndReason)
	}
}

func TestSidecars(t *testing.T) {
	h := start(t, nil)
	dir := project(t)
	pidFile := filepath.Join(dir, "web.pid")
	os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte(`
[[service]]
name = "web"
command = ["sh", "-c", "echo $$ > web.pid; sleep 0.3; echo listening on 3000; exec sleep 1000"]
ready = "listening on [0-9]+"
ready_timeout = "5s"
`), 0o600)
	s := h.start(dir, ipc.StartRequest{Command: []string{"sh", "-c", "test -f web.pid && sleep 100"}})
	if s.State != ipc.StateRunning {
		t.Fatalf("state = %s", s.State)
	}
	b, _ := os.ReadFile(pidFile)
	webPID, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if webPID == 0 {
		t.Fatal("the service did not start before the command")
	}
	if _, err := h.client.Stop(context.Background(), s.ID, ipc.StopRequest{}); err != nil {
		t.Fatal(err)
	}
	hf, err := state.LoadHandoff(state.HandoffPath(dir))
	if err != nil || !hf.DevServerWasRunning {
		t.Errorf("handoff dev_server_was_running = %v, %v; want true", hf != nil && hf.DevServerWasRunning, err)
	}
	if err := syscall.Kill(webPID, 0); err == nil {
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", webPID)); !strings.Contains(string(st), ") Z ") {
			t.Errorf("service %d outlived its session", webPID)
		}
	}

	bad := project(t)
	os.WriteFile(filepath.Join(bad, "sessiond.toml"), []byte(`
[[service]]
name = "db"
command = ["sh", "-c", "echo starting; exit 4"]
ready = "tcp://127.0.0.1:1"
`), 0o600)
	_, err = h.client.Start(context.Background(), ipc.StartRequest{Dir: bad, Command: []string{"sleep", "100"}})
	if err == nil || !strings.Contains(err.Error(), `service "db"`) || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Errorf("start with a failing service: %v", err)
	}
}

func TestRecentEvents(t *testing.T) {
	h := start(t, nil)
	s := h.start(project(t), ipc.StartRequest{Command: []string{"true"}})
	h.waitState(s.ID, ipc.StateEnded)
	// The ended event follows the record's end, so give it a moment.
	deadline := time.Now().Add(5 * time.Second)
	var types []string
	for {
		types = nil
		w, err := h.client.Events(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := w.Next()
			if err != nil {
				break
			}
			if ev.SessionID == s.ID {
				types = append(types, ev.Type)
			}
		}
		w.Close()
		if len(types) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Join(types, ",") != "started,ended" {
		t.Errorf("recent events = %v, want started,ended", types)
	}
}

// TestEndedEventCarriesTheRecord: the ended event's data is the session's
// final record, as its session.json holds it.
func TestEndedEventCarriesTheRecord(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w, err := h.client.Events(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := h.start(project(t), ipc.StartRequest{Command: []string{"sleep", "100"}})
	if _, err := h.client.Stop(ctx, s.ID, ipc.StopRequest{}); err != nil {
		t.Fatal(err)
	}
	var ended ipc.Event
	for ended.Type != ipc.EventEnded || ended.SessionID != s.ID {
		if ended, err = w.Next(); err != nil {
			t.Fatalf("no ended event: %v", err)
		}
	}
	var got, onDisk ipc.Session
	if err := json.Unmarshal(ended.Data, &got); err != nil {
		t.Fatalf("ended event data %q: %v", ended.Data, err)
	}
	if err := state.ReadJSON(filepath.Join(h.cfg.StateDir, "sessions", s.ID, "session.json"), &onDisk); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, onDisk) {
		t.Errorf("the ended event carries\n%+v\nsession.json holds\n%+v", got, onDisk)
	}
	if got.State != ipc.StateEnded || got.EndReason != ipc.EndInterrupted || got.Spec == nil {
		t.Errorf("the ended event's record: state %s, reason %s, spec %v", got.State, got.EndReason, got.Spec)
	}
}

func TestLogRotation(t *testing.T) {
	h := start(t, func(c *config.Config) { c.LogMaxSize = 4096 })
	// 20 bursts of 1 KiB, 100 ms apart: the log passes the cap several times.
	script := "for i in $(seq 20); do head -c 1024 /dev/zero | tr '\\0' x; echo; sleep 0.1; done"
	s := h.start(project(t), ipc.StartRequest{Command: []string{"sh", "-c", script}})
	rec := h.waitState(s.ID, ipc.StateEnded)
	cur, err := os.Stat(rec.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.Stat(rec.LogPath + ".1")
	if err != nil {
		t.Fatalf("no rotated log: %v", err)
	}
	if cur.Size() >= 20*1025 || old.Size() == 0 {
		t.Errorf("sizes: output.log %d, output.log.1 %d; want the log kept short by rotation", cur.Size(), old.Size())
	}
	if mode := old.Mode().Perm(); mode != 0o600 {
		t.Errorf("rotated log mode = %v, want 0600", mode)
	}
}

func TestSweepOrphans(t *testing.T) {
	cfg := configfile.Default()
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	sockDir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	cfg.Socket = filepath.Join(sockDir, "s.sock")
	cfg.Defaults.Checkpoint = ""
	// A child of a session the daemon never recorded (it crashed first),
	// and a process of another daemon's session.
	ours := exec.Command("sleep", "100")
	ours.Env = []string{"SESSIOND_SOCKET=" + cfg.Socket, "SESSIOND_SESSION_ID=ghost123"}
	other := exec.Command("sleep", "100")
	other.Env = []string{"SESSIOND_SOCKET=/elsewhere.sock", "SESSIOND_SESSION_ID=ghost123"}
	for _, c := range []*exec.Cmd{ours, other} {
		// A session's processes are never in the daemon's process group,
		// which the daemon never signals.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := proc.Start(c); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _ = other.Process.Kill(); _ = proc.Wait(other) }()
	run(t, cfg, nil)
	done := make(chan error, 1)
	go func() { done <- proc.Wait(ours) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the orphan of a session the daemon does not know was not killed")
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("another daemon's session process was killed: %v", err)
	}
}

// TestHistoryLimit: past history_limit the oldest ended sessions go, from
// the registry and from the state dir, a moment after the ends (a burst of
// them is one pass), and the newest stay.
func TestHistoryLimit(t *testing.T) {
	h := startClocked(t, func(c *config.Config) { c.HistoryLimit = 2 })
	var ids []string
	for range 5 {
		s := h.start(project(t), ipc.StartRequest{Command: []string{"true"}})
		h.waitState(s.ID, ipc.StateEnded)
		ids = append(ids, s.ID)
		// The next starts later: the oldest are these first ones.
		h.clock.Advance(100 * time.Millisecond)
	}
	gone := func(id string) bool {
		_, err := os.Stat(filepath.Join(h.cfg.StateDir, "sessions", id))
		return errors.Is(err, fs.ErrNotExist)
	}
	var kept []string
	// The pass comes a second after the last end (each end puts it off).
	h.advanceUntil(time.Second, "history trimmed to the two newest", func() bool {
		list, err := h.client.Sessions(context.Background(), ipc.ListOptions{All: true})
		if err != nil {
			t.Fatal(err)
		}
		kept = kept[:0]
		for _, s := range list {
			kept = append(kept, s.ID)
		}
		return len(kept) == 2 && gone(ids[0]) && gone(ids[1]) && gone(ids[2])
	})
	slices.Sort(kept)
	want := slices.Sorted(slices.Values(ids[3:]))
	if !slices.Equal(kept, want) {
		t.Fatalf("kept %v, want the two newest %v", kept, want)
	}
	for i, id := range ids {
		if g := gone(id); g != (i < 3) {
			t.Errorf("session %d (%s): directory gone = %v, want %v", i, id, g, i < 3)
		}
	}
}

// The listing's rows (GET /v1/sessions?view=row, sessionctl ps) are the
// rows of its records, live and ended, with and without -a.
func TestListingRowsAreTheRecordsRows(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	var ids []string
	for range 3 {
		resp, err := h.client.Start(ctx, ipc.StartRequest{Dir: project(t), Command: []string{"sleep", "10000"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.Session.ID)
	}
	// One that writes, in a project where a file changes: its last
	// activity comes from its output and from the watch, not its record.
	busy := project(t)
	resp, err := h.client.Start(ctx, ipc.StartRequest{Dir: busy, Command: []string{"sh", "-c", "echo hi; sleep 10000"}})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, resp.Session.ID)
	h.waitState(resp.Session.ID, ipc.StateRunning)
	if err := os.WriteFile(filepath.Join(busy, "edited.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := h.client.Session(ctx, resp.Session.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.LastActivity != nil && rec.LastFileEdited != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no activity seen: %+v", rec)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := h.client.Stop(ctx, ids[0], ipc.StopRequest{Grace: "1s"}); err != nil {
		t.Fatal(err)
	}
	for _, all := range []bool{false, true} {
		opt := ipc.ListOptions{All: all}
		recs, err := h.client.Sessions(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := h.client.SessionRows(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 3, true: 4}[all]; len(rows) != want || len(recs) != want {
			t.Fatalf("all=%v: %d rows, %d records, want %d", all, len(rows), len(recs), want)
		}
		for i := range recs {
			want, _ := json.Marshal(recs[i].Row())
			got, _ := json.Marshal(rows[i])
			if string(got) != string(want) {
				t.Errorf("all=%v: row %d\n%s\nwant the record's\n%s", all, i, got, want)
			}
		}
	}
}
