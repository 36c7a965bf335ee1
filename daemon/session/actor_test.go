package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/daemon/watch"
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

// The fakes below stand in for the daemon's shared services, so that a
// session runs a real child under a clock the test moves.

// records keeps every write of every record and checks the order.
type records struct {
	t    *testing.T
	mu   sync.Mutex
	byID map[string][]ipc.Session
}

func (r *records) MakeDir(dir string) (func() error, error) {
	return func() error { return nil }, state.EnsureDir(dir)
}

func (r *records) WriteRecord(p *ipc.Session) error {
	rec := *cloneRecord(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev := r.byID[rec.ID]; len(prev) > 0 && prev[len(prev)-1].Seq >= rec.Seq {
		r.t.Errorf("record of %s written with seq %d after seq %d", rec.ID, rec.Seq, prev[len(prev)-1].Seq)
	}
	r.byID[rec.ID] = append(r.byID[rec.ID], rec)
	return nil
}

func (r *records) last(id string) ipc.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.byID[id]
	return l[len(l)-1]
}

type events struct {
	mu  sync.Mutex
	evs []ipc.Event
}

func (e *events) Publish(ev ipc.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

func (e *events) types() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.evs {
		if ev.Type != ipc.EventActivity {
			out = append(out, ev.Type)
		}
	}
	return strings.Join(out, ",")
}

type noWatcher struct{}

func (noWatcher) Prepare(string, watch.Options) *watch.Prepared { return nil }

func (noWatcher) Watch(string, watch.Options) (*watch.Watch, error) {
	return nil, errors.New("not watched in this test")
}

type noSchedule struct{}

func (noSchedule) Schedule(string, func()) (func(), error) { return func() {}, nil }

// output lets the test say when the log was written; a test that sets
// hold keeps the start on its last step, the log's watch, until it is
// closed.
type output struct {
	mu      sync.Mutex
	onWrite func(time.Time)
	hold    chan struct{}
}

func (o *output) WatchLog(_ string, f func(time.Time)) func() {
	if o.hold != nil {
		<-o.hold
	}
	o.mu.Lock()
	o.onWrite = f
	o.mu.Unlock()
	return func() {}
}

func (o *output) Tail(string, int) []string { return nil }

func (o *output) Output(_ string, out *os.File) *os.File { return out }

func (o *output) Done(string) {}

func (o *output) write(t time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.onWrite(t)
}

type rig struct {
	clock *FakeClock
	recs  *records
	evs   *events
	out   *output
	deps  Deps
	ended chan *Session
}

func newRig(t *testing.T) *rig {
	r := &rig{clock: NewFakeClock(t0), recs: &records{t: t, byID: map[string][]ipc.Session{}}, evs: &events{},
		out: &output{}, ended: make(chan *Session, 1)}
	r.deps = Deps{
		Clock: r.clock, Log: zaptest.NewLogger(t), StateDir: t.TempDir(), Socket: "/nonexistent.sock",
		Events: r.evs, Records: r.recs, Watches: noWatcher{}, Schedule: noSchedule{}, Output: r.out,
		OnEnd: func(s *Session) { r.ended <- s },
	}
	return r
}

func testSpec(cmd ...string) config.Spec {
	return config.Spec{
		Command: cmd, Timeout: config.Duration{Duration: time.Hour}, WarnBefore: config.Duration{Duration: 10 * time.Minute},
		StopSignal: config.Signal{Num: 15, Name: "SIGTERM"}, StopGrace: config.Duration{Duration: 30 * time.Second},
		CheckpointMode: config.CheckpointRef, Restart: config.RestartNo,
	}
}

func (r *rig) start(t *testing.T, spec config.Spec) *Session {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := New(Params{ID: "t" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "")), UID: os.Geteuid(), Project: openProject(t, dir), Spec: spec}, &r.deps)
	s.Start()
	<-s.Started()
	if err := s.TakeStartInfo().Err; err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func openProject(t *testing.T, dir string) *state.Project {
	t.Helper()
	p, err := state.OpenProject(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitState waits for the snapshot to reach a state; the session's goroutine
// acts on the fake clock's timers as soon as they fire.
func waitState(t *testing.T, s *Session, want string) ipc.Session {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec := s.Snapshot()
		if rec.State == want {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("session is %s, want %s", rec.State, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDeadlineWarningAndExtendOnAFakeClock(t *testing.T) {
	r := newRig(t)
	s := r.start(t, testSpec("sleep", "100"))
	if rec := s.Snapshot(); rec.State != ipc.StateRunning || !rec.WarnAt.Equal(t0.Add(50*time.Minute)) {
		t.Fatalf("started = %s warn at %v", rec.State, rec.WarnAt)
	}

	r.clock.Advance(49 * time.Minute)
	// The warning's timer is not due yet: nothing can have happened.
	if st := s.Snapshot().State; st != ipc.StateRunning {
		t.Fatalf("state %s a minute before the warning", st)
	}
	r.clock.Advance(time.Minute)
	warned := waitState(t, s, ipc.StateWarned)
	if warned.Warning == nil || !warned.Warning.At.Equal(t0.Add(50*time.Minute)) {
		t.Errorf("warning = %+v, want it at the warning time", warned.Warning)
	}
	// The state is published first, then the file: whoever finds the
	// file and asks finds the session warned.
	var w state.Warning
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if err = state.ReadJSON(state.WarningPath(s.ProjectDir()), &w); err == nil {
			break
		}
	}
	if err != nil || w.TimeLeftSeconds != 600 {
		t.Errorf("warning.json = %+v, %v; want 600 s left", w, err)
	}

	rec, err := s.Extend(context.Background(), 30*time.Minute, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != ipc.StateRunning || !rec.Deadline.Equal(t0.Add(90*time.Minute)) || !rec.WarnAt.Equal(t0.Add(80*time.Minute)) {
		t.Errorf("after extend: %s deadline %v warn %v", rec.State, rec.Deadline, rec.WarnAt)
	}
	if _, err := os.Stat(state.WarningPath(s.ProjectDir())); err == nil {
		t.Error("warning.json still there after the deadline moved past the warning")
	}

	r.clock.Advance(30 * time.Minute) // t0+80m: warned again
	waitState(t, s, ipc.StateWarned)
	r.clock.Advance(10 * time.Minute) // t0+90m: the deadline
	<-s.Done()
	end := s.Snapshot()
	if end.State != ipc.StateEnded || end.EndReason != ipc.EndTimeout || end.Signal != "SIGTERM" {
		t.Errorf("end = %s/%s/%s, want ended/timeout/SIGTERM", end.State, end.EndReason, end.Signal)
	}
	if !end.EndedAt.Equal(t0.Add(90 * time.Minute)) {
		t.Errorf("ended at %v, want the deadline", end.EndedAt)
	}
	if last := r.recs.last(s.ID()); last.State != ipc.StateEnded || last.Seq != end.Seq {
		t.Errorf("last record written = %s seq %d, snapshot seq %d", last.State, last.Seq, end.Seq)
	}
	if got := <-r.ended; got != s {
		t.Error("OnEnd was called for another session")
	}
	// OnEnd comes after the ended event.
	if got, want := r.evs.types(), "started,warned,extended,warned,stopping,ended"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	<-s.Exited()
	if _, err := s.Extend(context.Background(), time.Minute, false, 0); !errors.Is(err, ErrEnded) {
		t.Errorf("extend after the end: %v, want ErrEnded", err)
	}
}

func TestIdleOnAFakeClock(t *testing.T) {
	r := newRig(t)
	spec := testSpec("sleep", "100")
	spec.IdleTimeout = config.Duration{Duration: 10 * time.Minute}
	s := r.start(t, spec)
	r.clock.Advance(5 * time.Minute)
	r.out.write(r.clock.Now()) // output at t0+5m
	r.clock.Advance(5 * time.Minute)
	// The first idle check finds output 5 minutes ago: the session goes on.
	deadline := time.Now().Add(5 * time.Second)
	for r.clock.Pending() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := s.Snapshot().State; st != ipc.StateRunning {
		t.Fatalf("state %s after 5 minutes without output", st)
	}
	r.clock.Advance(5 * time.Minute)
	<-s.Done()
	if end := s.Snapshot(); end.EndReason != ipc.EndIdle || !end.EndedAt.Equal(t0.Add(15*time.Minute)) {
		t.Errorf("end = %s at %v, want idle at t0+15m", end.EndReason, end.EndedAt)
	}
	<-r.ended
}

func TestStopDuringStart(t *testing.T) {
	r := newRig(t)
	spec := testSpec("sleep", "100")
	spec.Preflight = []string{"sleep 100"}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	s := New(Params{ID: "stopstart", UID: os.Geteuid(), Project: openProject(t, dir), Spec: spec}, &r.deps)
	s.Start()
	go func() { _ = s.Stop(context.Background(), Interrupted, -1) }()
	select {
	case <-s.Started():
	case <-time.After(10 * time.Second):
		t.Fatal("a stop did not end the preflight")
	}
	if err := s.TakeStartInfo().Err; !errors.Is(err, ipc.ErrConflict) || !strings.Contains(err.Error(), "stopped while starting") {
		t.Errorf("start error = %v, want stopped while starting", err)
	}
	<-s.Done()
	if rec := s.Snapshot(); rec.State != ipc.StateFailed || r.recs.last(s.ID()).State != ipc.StateFailed {
		t.Errorf("record = %s, want failed on disk and in the snapshot", rec.State)
	}
	<-r.ended
}

// TestCommandAsksBeforeTheStartIsOver: the command may ask about its
// session the moment it runs, while its start still has steps to take
// here (an agent's first hook on a busy machine). The session says it is
// launching from then on, and what the command asks is answered once the
// start is over, never refused. Before the command, during the preflight,
// it is not launching.
func TestCommandAsksBeforeTheStartIsOver(t *testing.T) {
	r := newRig(t)
	r.out.hold = make(chan struct{})
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	spec := testSpec("sleep", "100")
	spec.Preflight = []string{"sleep 1"}
	s := New(Params{ID: "asksearly", UID: os.Geteuid(), Project: openProject(t, dir), Spec: spec}, &r.deps)
	s.Start()
	if s.Launching() {
		t.Fatal("launching before the preflight ran")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !s.Launching() {
		if time.Now().After(deadline) {
			t.Fatal("the start never reached its command")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := s.Snapshot().State; st != ipc.StateStarting {
		t.Fatalf("state %s while the start is held", st)
	}
	type answer struct {
		rep ipc.Report
		err error
	}
	got := make(chan answer, 1)
	go func() {
		rep, err := s.Report(context.Background(), ipc.Report{Summary: "first words"}, 0, true)
		got <- answer{rep, err}
	}()
	select {
	case a := <-got:
		t.Fatalf("answered before the start was over: %+v", a)
	case <-time.After(100 * time.Millisecond):
	}
	close(r.out.hold)
	select {
	case a := <-got:
		if a.err != nil || a.rep.Summary != "first words" {
			t.Fatalf("report during the start: %+v, %v", a.rep, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the report was not answered after the start")
	}
	<-s.Started()
	if err := s.TakeStartInfo().Err; err != nil {
		t.Fatalf("start: %v", err)
	}
	if rec := s.Snapshot(); rec.State != ipc.StateRunning || rec.Report == nil || rec.Report.Summary != "first words" {
		t.Errorf("after the start: %s, report %+v", rec.State, rec.Report)
	}
	if err := s.Stop(context.Background(), Interrupted, 0); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	<-r.ended
}

func TestSendToAnEndedSession(t *testing.T) {
	deps := Deps{Clock: RealClock{}, Log: zaptest.NewLogger(t)}
	s := Load(ipc.Session{ID: "gone1", State: ipc.StateEnded}, config.Spec{}, nil, nil, &deps)
	for range 100 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.Stop(ctx, Interrupted, -1)
		cancel()
		if !errors.Is(err, ErrEnded) {
			t.Fatalf("stop of an ended session: %v, want ErrEnded", err)
		}
	}
}

// sessionGoroutines counts the goroutines running a session's code.
func sessionGoroutines() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	count := 0
	for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "daemon/session.(*Session)") {
			count++
		}
	}
	return count
}

// TestParkedSessions: a running session that nothing happens to holds no
// goroutine, and whatever happens to it wakes it: a request, its timer,
// its child's exit, a stop.
func TestParkedSessions(t *testing.T) {
	r := newRig(t)
	const n = 20
	r.ended = make(chan *Session, n)
	var ss []*Session
	for i := range n {
		dir, _ := filepath.EvalSymlinks(t.TempDir())
		s := New(Params{ID: fmt.Sprintf("park%d", i), UID: os.Geteuid(), Project: openProject(t, dir), Spec: testSpec("sleep", "100")}, &r.deps)
		s.Start()
		<-s.Started()
		if err := s.TakeStartInfo().Err; err != nil {
			t.Fatalf("start: %v", err)
		}
		ss = append(ss, s)
	}
	parked := func(what string) {
		t.Helper()
		var got int
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if got = sessionGoroutines(); got == 0 {
				return
			}
		}
		t.Fatalf("%s: %d goroutines run sessions' code, want none", what, got)
	}
	parked("after the start")

	// A request is answered by a parked session.
	rec, err := ss[0].Extend(context.Background(), 30*time.Minute, false, 0)
	if err != nil || !rec.Deadline.Equal(t0.Add(90*time.Minute)) {
		t.Fatalf("extend a parked session: %v, deadline %v", err, rec.Deadline)
	}
	parked("after a request")

	// Their timers wake them: every one is warned (but the one extended).
	r.clock.Advance(50 * time.Minute)
	for _, s := range ss[1:] {
		waitState(t, s, ipc.StateWarned)
	}
	if st := ss[0].Snapshot().State; st != ipc.StateRunning {
		t.Errorf("the session extended is %s at the old warning time, want running", st)
	}
	parked("after the warnings")

	// A child's exit wakes its session, which ends.
	if err := syscall.Kill(ss[1].Snapshot().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ss[1].Done()
	if end := ss[1].Snapshot(); end.State != ipc.StateEnded || end.Signal != "SIGKILL" {
		t.Errorf("after its child was killed: %s, signal %q; want ended by SIGKILL", end.State, end.Signal)
	}
	parked("after an end")

	for _, s := range ss[2:] {
		if err := s.Stop(context.Background(), Interrupted, -1); err != nil {
			t.Fatal(err)
		}
	}
	_ = ss[0].Stop(context.Background(), Interrupted, -1)
	for _, s := range ss {
		<-s.Exited()
		if end := s.Snapshot(); end.State != ipc.StateEnded {
			t.Errorf("%s is %s, want ended", s.ID(), end.State)
		}
	}
	parked("after the stops")
}

// seen keeps, for each event, the state the session's snapshot had when the
// event was published.
type seen struct {
	events
	s      atomic.Pointer[Session]
	states []string
}

func (e *seen) Publish(ev ipc.Event) {
	e.events.Publish(ev)
	if s := e.s.Load(); s != nil && ev.Type == ipc.EventAgentWaiting {
		e.mu.Lock()
		e.states = append(e.states, s.Snapshot().Agent.State)
		e.mu.Unlock()
	}
}

func TestAnEventIsNeverAheadOfTheRecord(t *testing.T) {
	r := newRig(t)
	ev := &seen{}
	r.deps.Events = ev
	spec := testSpec("sh", "-c", "sleep 100")
	spec.Agent = "claude-code"
	s := r.start(t, spec)
	ev.s.Store(s)
	ctx := context.Background()
	for _, p := range []string{
		`{"hook_event_name":"UserPromptSubmit","session_id":"5f0c7a5e-1c1e-4d36-9d5c-0a4a2f8e9b10","prompt":"go"}`,
		`{"hook_event_name":"PermissionRequest","session_id":"5f0c7a5e-1c1e-4d36-9d5c-0a4a2f8e9b10","tool_name":"Bash"}`,
	} {
		if _, err := s.AgentHook(ctx, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	ev.mu.Lock()
	states := slices.Clone(ev.states)
	ev.mu.Unlock()
	if len(states) != 1 || states[0] != ipc.AgentWaiting {
		t.Errorf("at the agent_waiting event the record said %q, want [waiting]", states)
	}
	if err := s.Stop(ctx, Interrupted, -1); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	<-r.ended
	<-s.Exited()
}
