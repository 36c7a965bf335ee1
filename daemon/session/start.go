package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/cgroup"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/logfile"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/daemon/watch"
	"github.com/sessiond/sessiond/ipc"
)

// Start runs the session: a worker starts its command (start), the
// session answering meanwhile (a stop cancels the start), then the session
// supervises it until it ends. Started says when the command runs or the
// start has failed.
func (s *Session) Start() {
	s.phase = phaseStarting
	s.work(func() func() {
		err := s.start()
		if err != nil {
			s.undoStart()
		}
		return func() { s.startDone(err) }
	})
	s.release()
}

// start brings the session from starting to running, in the order of
// DESIGN §4: the session's directory and the project's .sessiond, the
// session's record, the project's files (context.md), the preflight
// checks, the sidecars, the watch, the command; the git the project's
// files and the watch need runs meanwhile. It runs on a worker, which owns
// the session meanwhile.
func (s *Session) start() (err error) {
	// The project's recent git log is a process of its own: it runs while
	// the session's directory, record and cgroup are made, and
	// prepareProject waits for it (a start that fails first stops it).
	ctx, cancel := context.WithTimeout(s.startCtx, gitTimeout)
	defer cancel()
	gitLog := make(chan []string, 1)
	go func(cred *checkpoint.Credential) {
		gitLog <- checkpoint.RecentLog(ctx, checkpoint.LogRequest{Dir: s.projectDir, N: 10, Credential: cred})
	}(s.gitCredential())
	synced, err := s.deps.Records.MakeDir(s.dir)
	if err != nil {
		return fmt.Errorf("create session directory: %w", err)
	}
	// The directory's entry is synced meanwhile; the start is answered
	// (or fails) once it is.
	defer func() {
		if serr := synced(); err == nil && serr != nil {
			err = serr
		}
	}()
	// The preflight writes into the log itself; the command, through the
	// log keeper (not a pipe through the daemon), which takes the log
	// meanwhile.
	out, err := logfile.OpenAppend(s.logPath())
	if err != nil {
		return fmt.Errorf("open session log: %w", err)
	}
	defer out.Close()
	if s.uid != os.Geteuid() {
		_ = out.Chown(s.uid, -1)
	}
	output := s.attachOutput(out)
	defer output.abandon()
	// The project's .sessiond, and its line in git's info/exclude, before
	// the watch's git reads the ignore rules: that git (its view of them)
	// runs meanwhile too, and the watch takes it over before the command
	// starts.
	if err := s.ensureStateDir(); err != nil {
		return err
	}
	prepared := s.deps.Watches.Prepare(s.projectDir, s.watchOptions(nil))
	defer prepared.Close()
	if err := s.saveEnviron(); err != nil {
		return err
	}
	if err := s.makeCgroup(); err != nil {
		return err
	}
	// No session without its record: one that cannot be written is a
	// start that fails.
	if err := s.commit(); err != nil {
		return fmt.Errorf("write the session record: %w", err)
	}
	if err := s.prepareAgent(); err != nil {
		return err
	}
	if err := s.prepareProject(gitLog); err != nil {
		return err
	}
	if err := s.preflight(s.startCtx, out); err != nil {
		return err
	}
	if err := s.startSidecars(s.startCtx); err != nil {
		return err
	}
	// Watch before the command starts, so that no change it makes goes
	// unseen.
	s.watchProject(prepared)
	if err := s.startCtx.Err(); err != nil {
		return ipc.Conflict("session %s was stopped while starting", s.id)
	}
	s.launching.Store(true)
	var child *proc.Child
	if s.spec.OnTerminal() {
		child, err = s.spawnOnTerminal(s.command)
	} else {
		env := s.env()
		var path string
		if path, err = s.files().LookPath(s.command[0], s.projectDir, env); err == nil {
			// Through the log keeper's pipe where there is one: it holds
			// the log to its cap however the command writes.
			child, err = proc.Spawn(proc.Spec{
				Argv: s.command, Path: path, Dir: s.projectDir, Env: env, Output: output.take(), Credential: s.credential(), Cgroup: s.cg,
			})
			output.settle(err == nil)
		}
	}
	if err != nil {
		return ipc.BadRequest("%w", err)
	}
	s.child = child
	// The start is over: what its context held goes (a stop from now on
	// is a message).
	s.cancelStart()
	s.unwatchLog = s.watchLog()
	s.rec.State = ipc.StateRunning
	s.rec.PID = child.PID
	s.rec.StartTime, s.rec.PIDIno = child.StartTime, child.Ino
	// The child may ask about its session the moment it runs: it sees
	// itself running, not starting, even while the record is written.
	s.publish()
	_ = s.commit()
	return nil
}

// pendingOutput is what a plain session's command will write its output
// to, asked of the log keeper while the start goes on (its round trip,
// 0.3-0.5 ms, beside the start's other steps).
type pendingOutput struct {
	s    *Session
	out  *os.File
	w    *os.File
	done chan struct{}
	// settled says this end of the keeper's pipe is closed.
	settled bool
}

// attachOutput asks for the command's output, the log out opened for
// appending; a tty session's holder writes its log itself.
func (s *Session) attachOutput(out *os.File) *pendingOutput {
	o := &pendingOutput{s: s, out: out, done: make(chan struct{})}
	if s.spec.OnTerminal() {
		o.w = out
		close(o.done)
		return o
	}
	go func() {
		defer close(o.done)
		o.w = s.deps.Output.Output(s.logPath(), out)
	}()
	return o
}

// take waits for the output and returns it.
func (o *pendingOutput) take() *os.File {
	<-o.done
	return o.w
}

// settle closes this end of the keeper's pipe once the command was given
// it: the command holds it if it runs (used); if it does not, the keeper
// lets its end go.
func (o *pendingOutput) settle(used bool) {
	w := o.take()
	o.settled = true
	if w == o.out {
		return
	}
	w.Close()
	if !used {
		o.s.deps.Output.Done(o.s.logPath())
	}
}

// abandon settles the output of a start that failed before its command
// ran. It waits for the keeper's answer first, so that the log outlives
// its use.
func (o *pendingOutput) abandon() {
	if !o.settled {
		o.settle(false)
	}
}

// stepStarting: the start's worker runs; a stop cancels it (or, once the
// command runs, stops the session), anything else waits for the start: the
// command may ask about its session (an agent's first hooks) the moment it
// runs, before its start is over here.
func (s *Session) stepStarting(ev event) {
	if ev.what != gotRequest {
		return
	}
	switch r := ev.req.(type) {
	case *stopRequest:
		s.cancelStart()
		if s.stopAsked == nil || (r.grace >= 0 && (s.stopAsked.grace < 0 || r.grace < s.stopAsked.grace)) {
			s.stopAsked = r
		}
		r.reply <- nil
	default:
		s.deferred = append(s.deferred, r)
	}
}

// startDone ends the start, on the session's goroutine: the session
// supervises its command from now on (and stops it at once if a stop came
// meanwhile), or it failed.
func (s *Session) startDone(err error) {
	deferred := s.deferred
	s.deferred = nil
	if err != nil {
		s.fail(err)
		for _, r := range deferred {
			r.refuse(ErrEnded)
		}
		return
	}
	s.schedule()
	s.logger().Info("session started", zap.String("command", filepath.Base(s.spec.Command[0])),
		zap.Int("args", len(s.spec.Command)-1), zap.String("dir", s.projectDir), zap.Int("pid", s.child.PID))
	s.logger().Debug("session argv", zap.Strings("command", s.command))
	close(s.started)
	// The starter, woken by the close, waits on this goroutine's
	// processor until the goroutine blocks: it is let answer now, not
	// after the lock's write below (0.6-1.6 ms of a sequential start's
	// 6 in the daemon, bench/README.md, the sixteenth pass).
	runtime.Gosched()
	// The lock says what the record says (it is for people and for the
	// next start here, not for recovery): its sync is not the
	// reply's to wait for. The actor writes it before anything else can
	// happen to the session.
	s.writeLock()
	// The message names the executable, not its arguments: events reach
	// notification sinks (a webhook, a chat), and an agent's arguments
	// are its prompt. The record the event carries has the command whole,
	// for those who may see it.
	s.emit(ipc.EventStarted, fmt.Sprintf("started %s in %s", commandSummary(s.spec.Command), s.projectDir), s.Snapshot())
	s.supervise()
	if r := s.stopAsked; r != nil {
		s.stopAsked = nil
		s.beginAskedStop(r)
	}
	for _, r := range deferred {
		s.step(event{what: gotRequest, req: r})
	}
}

// undoStart stops what a start began before it failed.
func (s *Session) undoStart() {
	s.stopSidecars()
	if s.cg != nil {
		s.killAll()
		s.closeCgroup()
		s.removeCgroup()
	}
	if s.watch != nil {
		_ = s.watch.Close()
		s.watch = nil
		s.watchP.Store(nil)
	}
}

// fail records a session that could not start, what it began undone.
func (s *Session) fail(err error) {
	now := s.deps.Clock.Now()
	s.rec.State = ipc.StateFailed
	s.rec.EndedAt = &now
	s.rec.Error = err.Error()
	s.startInfo.Err = err
	_ = s.commit()
	close(s.started)
	close(s.done)
	s.emit(ipc.EventFailed, err.Error(), nil)
	s.logger().Info("session failed to start", zap.Error(err))
	if s.deps.OnEnd != nil {
		s.deps.OnEnd(s)
	}
	s.phase = phaseOver
}

// gitTimeout bounds the git facts collected at a session's start and end.
const gitTimeout = 10 * time.Second

// prepareProject readies the project before the command starts, with the
// session's user's rights (its .sessiond made already): the restore
// summary, the previous handoff, the feature list, context.md (with the project's recent git log,
// which gitLog gives). Problems with earlier files are notices, never a
// failed start.
func (s *Session) prepareProject(gitLog <-chan []string) error {
	p := s.proj
	now := s.deps.Clock.Now()
	// The git log first: a process of its own, not one of the file steps
	// below, which run in one Hold (one opening of the project and its
	// .sessiond, and for another user's project one thread with that
	// user's rights, rather than one per step).
	log := <-gitLog
	return p.Hold(func(p *state.Project) error {
		return s.prepareFiles(p, now, log, s.notice)
	})
}

// ensureStateDir makes the project's .sessiond (start's first step in the
// project); that git could not be told to leave it out is a notice.
func (s *Session) ensureStateDir() error {
	if err := s.proj.EnsureStateDir(); errors.Is(err, state.ErrGitExclude) {
		s.notice(err)
	} else if err != nil {
		return ipc.BadRequest("prepare %s: %w", s.projectDir, err)
	}
	return nil
}

// notice tells the starting user of a problem with the project's earlier
// files, which never fails a start.
func (s *Session) notice(err error) {
	s.startInfo.Notices = append(s.startInfo.Notices, err.Error())
	s.logger().Warn("project file", zap.Error(err))
}

// prepareFiles is prepareProject's file steps, in the Hold of p.
func (s *Session) prepareFiles(p *state.Project, now time.Time, gitLog []string, notice func(error)) error {
	st, err := p.LoadSessionState()
	if err != nil {
		notice(err)
	}
	if st != nil {
		s.rec.Blockers = append(s.rec.Blockers, st.ActiveBlockers...)
		s.rec.BlockerSeq = st.BlockerSeq
	}
	feats, ferr := p.LoadFeatures(s.spec.FeatureList)
	if ferr == nil {
		s.featuresAtStart = feats
		s.rec.PassingAtStart = []ipc.TaskID{}
		for _, f := range feats {
			if f.Passes {
				s.rec.PassingAtStart = append(s.rec.PassingAtStart, f.Key())
			}
		}
	} else if !errors.Is(ferr, fs.ErrNotExist) {
		notice(ferr)
	}
	// What start prints and what context.md says come from one view: the
	// state with progress recomputed from the feature list as it is now.
	view, notes := ProjectView(st, feats, ferr)
	if view != nil {
		s.startInfo.Summary = state.RestoreSummary(view, now, notes...)
	}
	var prev *state.Handoff
	if h, err := p.LoadHandoff(); err == nil {
		prev = h
		s.prevHandoff = filepath.Join(p.StateDir(), state.HandoffFile)
	} else if !errors.Is(err, fs.ErrNotExist) {
		notice(err)
	}
	if l, err := p.ReadLock(); err == nil && l.SessionID != s.id && (s.deps.Live == nil || !s.deps.Live(l.SessionID)) {
		notice(fmt.Errorf("%s: session %s ended uncleanly (its lock was left behind)", filepath.Join(p.StateDir(), state.LockFile), l.SessionID))
	} else if errors.Is(err, state.ErrCorrupt) {
		// Moved aside, and still a lock left behind.
		notice(fmt.Errorf("a session ended uncleanly (its lock was left behind, unreadable): %w", err))
	}
	in := state.ContextInput{SessionID: s.id, ProjectDir: s.projectDir, Previous: prev, State: view, Notes: notes, Now: now,
		Deadline: s.rec.Deadline, WarnAt: s.rec.WarnAt}
	if a := s.rec.Agent; a != nil && a.ResumedFrom != "" {
		in.Agent, in.Continues = a.Name, a.ResumedFrom
	}
	if ferr == nil && (view == nil || view.NextFrom != state.NextFromReport) {
		if next := state.NextTasks(feats, 1); len(next) > 0 {
			in.NextTask = &next[0]
		}
		if view == nil {
			// No state yet: the feature list alone says what is next.
			pr := state.Progress(feats)
			v := &state.SessionState{ProgressPct: math.Round(pr.Pct*10) / 10, TasksDone: pr.Done, TasksTotal: pr.Total, NextFrom: state.NextFromFeatures}
			for _, f := range state.NextTasks(feats, nextLimit) {
				v.NextActions = append(v.NextActions, featureLine(f))
			}
			in.State = v
		}
	}
	in.GitLog = gitLog
	if err := p.WriteContext(in); err != nil {
		return fmt.Errorf("write context: %w", err)
	}
	return nil
}

// watchOptions are the options of the project's watch; prepared is what
// of it was begun ahead, or nil.
func (s *Session) watchOptions(prepared *watch.Prepared) watch.Options {
	return watch.Options{Ignore: s.spec.Watch.Ignore, LeaveOut: s.deps.LeaveOut, OnActivity: s.onActivity, User: s.owner, Prepared: prepared}
}

// watchProject starts watching the project (taking over prepared, begun
// ahead, when it is not nil); without a watch, idle detection sees output
// only and checkpoints run at every schedule tick.
func (s *Session) watchProject(prepared *watch.Prepared) {
	w, err := s.deps.Watches.Watch(s.projectDir, s.watchOptions(prepared))
	if err != nil {
		s.logger().Warn("project not watched: idle detection sees output only, checkpoints run on every schedule tick", zap.Error(err))
		return
	}
	s.watch = w
	s.watchP.Store(w)
}

// activityEvery rate-limits the activity event of one session.
const activityEvery = 5 * time.Second

// onActivity runs on the watcher's goroutine: it only emits the
// rate-limited activity event (the watch keeps the facts).
func (s *Session) onActivity(a watch.Activity) {
	last := s.lastActivityEvent.Load()
	if a.Time.UnixNano()-last < int64(activityEvery) || !s.lastActivityEvent.CompareAndSwap(last, a.Time.UnixNano()) {
		return
	}
	s.deps.Events.Publish(ipc.Event{Type: ipc.EventActivity, SessionID: s.id, ProjectID: s.projectID,
		Message: "edited " + a.Path, UID: s.uid, Time: a.Time, Data: eventData(map[string]any{"path": a.Path})})
}

// writeLock records the live session in the project's session.lock; the
// files its end writes into are made ready later (prepareEnd).
func (s *Session) writeLock() {
	if s.proj == nil {
		return
	}
	l := &state.Lock{SessionID: s.id, DaemonPID: os.Getpid(), ChildPID: s.rec.PID,
		ChildStartTime: s.rec.StartTime, BootID: s.rec.BootID, CreatedAt: s.deps.Clock.Now()}
	if err := s.proj.WriteLock(l); err != nil {
		s.logger().Warn("write session lock", zap.Error(err))
		return
	}
	s.later(s.prepareEnd)
}

// later runs f once starts and ends pause (deps.Later), at once without
// a queue.
func (s *Session) later(f func()) {
	if s.deps.Later == nil {
		f()
		return
	}
	s.deps.Later.Do(f)
}

// tidy is later for work that the daemon's stop does not drop.
func (s *Session) tidy(f func()) {
	if s.deps.Later == nil {
		f()
		return
	}
	s.deps.Later.Tidy(f)
}

// prepareEnd makes ready, in the project, the files the session's end
// writes into (state.PrepareEnd), unless it has ended already. It runs
// once starts pause: making a file is the dearest step of an end, and of
// a start, on ext4, and a batch of starts waits for none of them. An end
// that comes first makes its files itself, as before.
func (s *Session) prepareEnd() {
	select {
	case <-s.done:
		return
	default:
	}
	if err := s.proj.PrepareEnd(s.spec.ProgressFile); err != nil {
		s.logger().Debug("make the end's files ready", zap.Error(err))
	}
	// The handoff's archive, where the session's directory was made
	// rather than taken from the spares (a batch that used them up).
	if err := state.MakeSpare(s.dir, state.HandoffFile); err != nil {
		s.logger().Debug("make the archive's spare", zap.Error(err))
	}
}

// preflightTimeout bounds each preflight command.
const preflightTimeout = 5 * time.Minute

// preflight runs the spec's preflight commands in the project, with the
// session's environment and output going to its log; the first failure
// fails the start. A stop during the start kills the one running.
func (s *Session) preflight(ctx context.Context, out *os.File) error {
	for _, c := range s.spec.Preflight {
		ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c)
		cmd.Dir = s.projectDir
		cmd.Env = s.env()
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.credential()}
		cmd.Cancel = proc.CancelGroup(cmd)
		fmt.Fprintf(out, "sessiond: preflight: %s\n", c)
		err := proc.RunIn(s.cg, cgroup.LeafCommand, cmd)
		cancel()
		if err != nil {
			if s.startCtx.Err() != nil {
				return ipc.Conflict("session %s was stopped while starting (during preflight %q)", s.id, c)
			}
			return ipc.BadRequest("preflight %q failed: %w (its output is in sessionctl logs %s)", c, err, s.id)
		}
	}
	return nil
}

// commandSummary is argv's executable and how many arguments it has.
func commandSummary(argv []string) string {
	if len(argv) == 0 {
		return "nothing"
	}
	name := filepath.Base(argv[0])
	switch n := len(argv) - 1; n {
	case 0:
		return name
	case 1:
		return name + " (1 argument)"
	default:
		return fmt.Sprintf("%s (%d arguments)", name, n)
	}
}
