package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/lazylog"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/daemon/watch"
	"github.com/sessiond/sessiond/ipc"
)

// Session is one supervised run: an actor. One goroutine at a time runs
// it (the start's, then each that a wake of the parked session starts, or
// the stop's and the end's; see run.go) and owns the record, the child,
// the watch, the schedule, the sidecars and the timers; other goroutines
// send it messages and read the snapshot it publishes after each write of
// the record.
type Session struct {
	// Set at creation, never changed.
	id         string
	uid        int
	projectDir string
	projectID  string
	name       string
	dir        string // the session's directory in the state dir
	startedAt  time.Time
	spec       config.Spec
	// proj does the session's work in its project with its owner's rights
	// (nil when the project was unreachable at a recovery); owner is nil
	// when the session runs with the daemon's own identity.
	proj  *state.Project
	owner *state.Owner
	// environ is the environment the session was started with (Environ);
	// set once, by New or, for a loaded session, by environOnce.
	environ     []string
	environOnce sync.Once
	// environSaved: environ is in the session's directory (a queued
	// session keeps it there before its start).
	environSaved bool
	// gitCred is the owner's credential for git, made once (gitOnce).
	gitOnce   sync.Once
	gitCred   *checkpoint.Credential
	gitShadow string
	deps      *Deps

	// inbox holds the requests to the session (nil for one loaded ended).
	inbox chan request
	// ticks are the checkpoint schedule's, coalesced; made with the
	// schedule (nil: none).
	ticks chan struct{}
	// ckptDone delivers the result of the checkpoint being taken; made
	// with the first.
	ckptDone chan *ckptResult
	// worked delivers what a worker did, to apply on the session's
	// goroutine; a worker runs the blocking steps of the start and of the
	// end, and while one runs it owns the session's state (see run.go).
	worked chan func()
	// wakes counts the wake-ups not yet taken by the session's loop: at
	// zero the session is parked, without a goroutine, and the next kick
	// starts one (see run.go); its maker holds it at one until it releases
	// it. alarmed says that a timer fired.
	wakes   atomic.Int32
	alarmed atomic.Bool

	// pub is the record as last written, or as last told: an event is
	// published only after the record that says it. Immutable once
	// published.
	pub atomic.Pointer[ipc.Session]
	// watchP is the project's watch while the session is live, for the
	// live fields of snapshots.
	watchP atomic.Pointer[watch.Watch]
	// cgP is the session's cgroup for PollMemory (nil: none); memMu
	// guards cgWatch, the account of its memory between polls.
	cgP     atomic.Pointer[cgroup.Group]
	memMu   sync.Mutex
	cgWatch memoryWatch
	// lastOutput is the time of the last write to the log (Unix ns).
	lastOutput atomic.Int64
	// lastActivityEvent is when the last activity event went out (Unix ns).
	lastActivityEvent atomic.Int64
	// launching says that the start has reached its command (see
	// Launching).
	launching atomic.Bool

	// started is closed once the start's outcome is known.
	started chan struct{}
	// startInfo is what the start found until the starter takes it (nil
	// for a session loaded from disk, and once taken).
	startInfo *StartInfo
	// cancelStart cancels preflight and sidecar readiness (a stop during
	// the start).
	startCtx    context.Context
	cancelStart context.CancelFunc
	// done is closed once the session's end is on disk.
	done chan struct{}
	// exited is closed when the goroutine returns: after done, or after a
	// leave (daemon shutdown with on_shutdown = "leave").
	exited chan struct{}

	// Owned by the session's goroutine.
	phase phase
	// working: a worker runs and owns what follows; the goroutine only
	// answers requests, and takes nothing else, meanwhile.
	working bool
	// stopAsked is a stop asked for while the session starts, to begin
	// once its command runs; deferred are the other requests that came
	// meanwhile, answered then.
	stopAsked *stopRequest
	// loaded says the session comes from an earlier daemon's record.
	loaded   bool
	deferred []request
	// stop is the stop under way (phase stopping), end the end (ending).
	stop *stopping
	end  *ending
	// leaving: the session is being left running for the next daemon,
	// once its checkpoint is in.
	leaving bool
	rec     ipc.Session
	child   *proc.Child
	adopted bool
	// cg is the session's cgroup (nil: none); cgWatch the account of its
	// memory while it runs. emptied is the cgroup its end emptied, to be
	// removed once the end is on disk; cgGone says it was found empty
	// (groupGone).
	cg         *cgroup.Group
	emptied    *cgroup.Group
	cgGone     bool
	watch      *watch.Watch
	unschedule func()
	unwatchLog func()
	sidecars   []*sidecar
	ckpt       ckptState
	timeline   timeline
	sv         supervision
	// prevHandoff is the previous session's handoff, given to the child.
	prevHandoff string
	// featuresAtStart is the feature list when the session started, to
	// tell which features turned passing during it.
	featuresAtStart []state.Feature
	restartHistory  []time.Time
	// command is the command line run: the spec's, with what the agent's
	// adapter adds; agent is the agent while it runs (nil for a command
	// that is no agent sessiond knows).
	command []string
	agent   *agentRun
	// resume is the conversation the session continues ("": a new one).
	resume string
	// recDirty: the published record holds changes not yet written (an
	// agent's token counts), written with the next commit.
	recDirty bool
	// limitStop: the agent hit a limit and on_limit says stop.
	limitStop bool

	// term is the terminal of a tty session (nil for others), owned by the
	// goroutine; termP publishes it to the API's goroutines.
	term  *terminal
	termP atomic.Pointer[terminal]
}

// Params say what session to create.
type Params struct {
	ID   string
	Name string
	UID  int
	// Project is the project, opened with its owner's rights; Owner is the
	// identity the session runs as (nil: the daemon's own).
	Project *state.Project
	Owner   *state.Owner
	Spec    config.Spec
	// EnvKeys names the variables given with --env (values never stored).
	EnvKeys []string
	// Environ is the environment of whoever started the session, which it
	// runs with (spec.BaseEnv); nil for none.
	Environ []string
	// RestartOf is the session this one restarts, Restarts its count, and
	// RestartHistory when the earlier restarts of the chain happened.
	RestartOf      string
	Restarts       int
	RestartHistory []time.Time
	// Resume is the agent conversation to continue ("": a new one).
	Resume string
	// Worktree is the git worktree the session runs in (Project is its
	// directory), nil for none.
	Worktree *ipc.Worktree
	// Pool is the pool the session counts in. Queue, when set, makes a
	// queued session (Enqueue rather than Start), with Deadline the
	// deadline it carries (zero: its timeout from its start).
	Pool     string
	Queue    *ipc.QueuePlace
	Deadline time.Time
	WarnAt   time.Time
	// Agent is what a queued session shows of its agent until it runs
	// (a continuation's, limited).
	Agent *ipc.Agent
}

// StartInfo is what a start found, for the one who asked for it.
type StartInfo struct {
	// Err is why the start failed; nil once the command runs.
	Err error
	// Summary is the project's restore summary ("" without state).
	Summary string
	// Notices are problems that did not stop the start.
	Notices []string
}

// New creates a session in state starting. It does nothing until Start.
func New(p Params, deps *Deps) *Session {
	now := deps.Clock.Now()
	dir := p.Project.Dir()
	s := newSession(p.ID, p.UID, dir, now, p.Spec, deps)
	s.inbox = make(chan request, inboxSize)
	s.startCtx, s.cancelStart = context.WithCancel(context.Background())
	s.proj, s.owner = p.Project, p.Owner
	deadline, warnAt := p.Spec.Deadline(now)
	name := p.Name
	if name == "" {
		name = filepath.Base(dir)
	}
	s.name = name
	s.rec = ipc.Session{
		ID: p.ID, Name: name, ProjectDir: dir, ProjectID: state.ProjectID(dir),
		Command: p.Spec.Command, State: ipc.StateStarting, StartedAt: now,
		Deadline: deadline, WarnAt: warnAt, Restarts: p.Restarts, RestartOf: p.RestartOf,
		FilesChanged: []string{}, LogPath: s.logPath(), UID: p.UID, BootID: deps.BootID,
		EnvKeys: p.EnvKeys, Spec: &s.spec, Worktree: p.Worktree, Pool: p.Pool,
	}
	if p.Queue != nil {
		q := *p.Queue
		s.rec.State, s.rec.Queue = ipc.StateQueued, &q
		s.rec.Deadline, s.rec.WarnAt = p.Deadline, p.WarnAt
		s.rec.Agent = p.Agent
	}
	s.restartHistory = p.RestartHistory
	s.resume = p.Resume
	s.environ = p.Environ
	s.startInfo = &StartInfo{}
	s.publish()
	return s
}

// Load recreates a session from its record on disk (an earlier daemon's).
// A live one is then adopted (Adopt) or ended as found dead (Recover); an
// ended one only answers reads. proj is its project opened with owner's
// rights, nil if it could not be.
func Load(rec ipc.Session, spec config.Spec, proj *state.Project, owner *state.Owner, deps *Deps) *Session {
	s := newSession(rec.ID, rec.UID, rec.ProjectDir, rec.StartedAt, spec, deps)
	s.proj, s.owner = proj, owner
	s.loaded = true
	rec.Spec = &s.spec
	s.name = rec.Name
	s.rec = rec
	s.publish()
	if !ipc.Live(rec.State) {
		// An ended session only answers reads: a request finds it exited.
		close(s.started)
		close(s.done)
		close(s.exited)
		return s
	}
	s.inbox = make(chan request, inboxSize)
	if len(rec.EnvKeys) > 0 {
		// Its spec lacks the values given with --env until they are read
		// back: before it is queued or started again.
		s.loadEnviron()
	}
	return s
}

// newSession makes what every session has; a session that will run (New,
// or Load of a live one) gets its inbox and start context from its maker.
func newSession(id string, uid int, projectDir string, startedAt time.Time, spec config.Spec, deps *Deps) *Session {
	s := &Session{
		id: id, uid: uid, projectDir: projectDir, projectID: state.ProjectID(projectDir), startedAt: startedAt, spec: spec, deps: deps,
		dir:     filepath.Join(deps.StateDir, "sessions", id),
		started: make(chan struct{}), done: make(chan struct{}), exited: make(chan struct{}),
		startCtx: context.Background(), cancelStart: func() {},
	}
	s.wakes.Store(1) // held by its maker
	return s
}

// logger is the daemon's logger with the session's id on every entry,
// made for each use: a session logs at its start and end, and rarely in
// between, so that it holds no logger of its own.
func (s *Session) logger() *zap.Logger {
	return lazylog.With(s.deps.Log, zap.String("session", s.id))
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Name returns the session's name, a handle as good as its id.
func (s *Session) Name() string { return s.name }

// RestartOf returns the session this one restarted, if any.
func (s *Session) RestartOf() string { return s.pub.Load().RestartOf }

// UID returns the user the session runs as and belongs to.
func (s *Session) UID() int { return s.uid }

// Loaded reports whether the session comes from an earlier daemon's
// record (Load), not from a start of this one.
func (s *Session) Loaded() bool { return s.loaded }

// ProjectDir returns the session's project directory.
func (s *Session) ProjectDir() string { return s.projectDir }

// StartedAt returns when the session started.
func (s *Session) StartedAt() time.Time { return s.pub.Load().StartedAt }

// Project returns the session's project handle (nil if unreachable).
func (s *Session) Project() *state.Project { return s.proj }

// Owner returns the identity the session runs as (nil: the daemon's).
func (s *Session) Owner() *state.Owner { return s.owner }

// Spec returns the spec the session runs under.
func (s *Session) Spec() config.Spec { return s.spec }

// Dir returns the session's directory in the daemon's state dir.
func (s *Session) Dir() string { return s.dir }

// UsageQuery is what proc.UsageOf needs to measure the session's process
// tree; false when the session is not live.
func (s *Session) UsageQuery() (proc.UsageQuery, bool) {
	rec := s.pub.Load()
	if !ipc.Running(rec.State) || rec.PID <= 0 {
		return proc.UsageQuery{}, false
	}
	return proc.UsageQuery{SessionID: s.id, PGID: rec.PID, Spawned: !s.adopted}, true
}

// Contained is what the session's cgroup says it uses: the CPU time of
// every process it had, its memory (known false without a memory
// controller) and its processes; ok false for a session in no cgroup.
func (s *Session) Contained() (cpu time.Duration, mem int64, memKnown bool, procs int, ok bool) {
	g := s.cgP.Load()
	if g == nil {
		return 0, 0, false, 0, false
	}
	if mem, memKnown = g.MemoryNow(); !memKnown {
		return 0, 0, false, 0, true
	}
	return g.CPU(), mem, true, len(g.Procs("")), true
}

// MeasuredByCgroup reports whether the session's use is read from its
// cgroup (Contained): it has one, and a memory controller accounts for it.
func (s *Session) MeasuredByCgroup() bool {
	g := s.cgP.Load()
	return g != nil && g.MemoryAccounted()
}

// LogPath returns the path of the session's output log.
func (s *Session) LogPath() string { return s.logPath() }

// RestartHistory returns when the restarts of the session's chain happened
// (the restart policy counts those within restart_window).
func (s *Session) RestartHistory() []time.Time {
	return append([]time.Time(nil), s.restartHistory...)
}

// Started is closed once the start's outcome is known; TakeStartInfo then
// says what it was.
func (s *Session) Started() <-chan struct{} { return s.started }

// TakeStartInfo returns what the start found, to the one who started the
// session, once Started is closed; the session lets it go.
func (s *Session) TakeStartInfo() StartInfo {
	info := s.startInfo
	if info == nil {
		return StartInfo{}
	}
	s.startInfo = nil
	return *info
}

// Done is closed once the session's end (or failed start) is on disk.
func (s *Session) Done() <-chan struct{} { return s.done }

// Exited is closed when the session's goroutine has returned.
func (s *Session) Exited() <-chan struct{} { return s.exited }

func (s *Session) logPath() string { return filepath.Join(s.dir, "output.log") }

// Launching reports whether the start has reached its command: from then
// on the command may ask about its session (an agent's first hooks, its
// first report) before the start is over here, and what it asks waits for
// the start's end rather than being refused as a request during the
// preflight or the sidecars is (one that waited there would wait for the
// start that waits for it).
func (s *Session) Launching() bool { return s.launching.Load() }

// State returns the session's state, as Snapshot would, without copying
// its record.
func (s *Session) State() string { return s.pub.Load().State }

// Snapshot returns the record as last written, with the live fields
// (activity, files changed) brought up to date. It never waits on the
// session; the slices it holds must not be modified.
func (s *Session) Snapshot() ipc.Session {
	r := *s.pub.Load()
	if !ipc.Live(r.State) {
		return r
	}
	if t := s.lastOutput.Load(); t != 0 {
		lo := time.Unix(0, t)
		if r.LastActivity == nil || lo.After(*r.LastActivity) {
			r.LastActivity = &lo
		}
	}
	if w := s.watchP.Load(); w != nil {
		applyStats(&r, w.Stats())
	}
	return r
}

// Row returns the session's row of a listing: Snapshot().Row(), without
// the copy of the whole record or the list of files changed, which a row
// does not show (a listing of 100 sessions made 100 of each).
func (s *Session) Row() ipc.SessionRow {
	r := s.pub.Load()
	row := r.Row()
	if !ipc.Live(r.State) {
		return row
	}
	// The latest of the record's, the output's and the watch's; only the
	// one kept is allocated.
	var last time.Time
	if row.LastActivity != nil {
		last = *row.LastActivity
	}
	newer := false
	if t := s.lastOutput.Load(); t != 0 {
		if lo := time.Unix(0, t); row.LastActivity == nil || lo.After(last) {
			last, newer = lo, true
		}
	}
	if w := s.watchP.Load(); w != nil {
		if wa := w.LastActivity(); !wa.IsZero() && ((row.LastActivity == nil && !newer) || wa.After(last)) {
			last, newer = wa, true
		}
	}
	if newer {
		at := last
		row.LastActivity = &at
	}
	return row
}

// publish makes the record as it is now the snapshot readers see.
func (s *Session) publish() {
	s.pub.Store(cloneRecord(&s.rec))
}

// commit writes the record, in order, with the next sequence number, then
// publishes it. A failed write is logged and kept in the record's error;
// the caller decides whether it is fatal.
func (s *Session) commit() error {
	_, err := s.commitRecord(false)
	return err
}

// commitJSON is commit that also returns the record's compact encoding as
// it was written, when the record writer gives it (nil otherwise), for
// the event that carries the record.
func (s *Session) commitJSON() json.RawMessage {
	data, _ := s.commitRecord(true)
	return data
}

func (s *Session) commitRecord(encoded bool) (data json.RawMessage, err error) {
	// The watcher's findings go to disk with every write of the record,
	// so that a crash loses only what changed since.
	if s.watch != nil && ipc.Live(s.rec.State) {
		applyStats(&s.rec, s.watch.Stats())
	}
	s.rec.Seq++
	s.recDirty = false
	if w, ok := s.deps.Records.(RecordJSONWriter); ok && encoded {
		data, err = w.WriteRecordJSON(&s.rec)
	} else {
		err = s.deps.Records.WriteRecord(&s.rec)
	}
	if err != nil {
		data = nil
		s.logger().Error("write session record", zap.Error(err))
	} else if s.deps.Stops != nil && (s.rec.State == ipc.StateStopping || !ipc.Live(s.rec.State)) {
		// The record carries the stop's intent, or the end.
		s.deps.Stops.Done(s.id)
	}
	s.publish()
	return data, err
}

// emit publishes an event of the session, after the record as it stands:
// whoever an event reaches (a notification's reader, a dashboard) and then
// asks finds the state it tells of, not the one before.
func (s *Session) emit(typ, msg string, data any) {
	s.publish()
	ev := ipc.Event{Type: typ, SessionID: s.id, ProjectID: s.projectID, Message: msg, UID: s.uid, Time: s.deps.Clock.Now()}
	if data != nil {
		ev.Data = eventData(data)
	}
	s.deps.Events.Publish(ev)
}

// onOutput records output activity; it runs on the output watcher's
// goroutine and must not block.
func (s *Session) onOutput(t time.Time) { s.lastOutput.Store(t.UnixNano()) }

// lastActivity is the later of the last output and the last file change.
func (s *Session) lastActivity() time.Time {
	t := s.startedAt
	if lo := s.lastOutput.Load(); lo != 0 {
		t = time.Unix(0, lo)
	}
	if s.watch != nil {
		if fa := s.watch.Stats().LastActivity; fa.After(t) {
			t = fa
		}
	}
	return t
}
