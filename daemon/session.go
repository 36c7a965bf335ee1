package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// session is one supervised run. Its run goroutine is the only writer of
// rec while the session is live; readers take snapshots under mu.
type session struct {
	d          *Daemon
	log        *zap.Logger
	id         string
	uid        int
	projectDir string
	startedAt  time.Time
	dir        string // the session's directory in the state dir
	spec       config.Spec

	mu  sync.Mutex
	rec ipc.Session

	child *proc.Child
	// adopted is set for a session started by an earlier daemon.
	adopted bool
	cmds    chan command
	// done is closed once the session's end is on disk.
	done chan struct{}

	// lastOutput is the time of the last write to the session's log, in
	// Unix nanoseconds.
	lastOutput atomic.Int64
	// output is replaced (and the old one closed) on every write to the
	// log, to wake followers.
	outMu  sync.Mutex
	output chan struct{}
	// lastRotateCheck is when the log's size was last looked at.
	lastRotateCheck atomic.Int64

	// prevHandoff is the previous session's handoff, given to the child.
	prevHandoff string
	// featuresAtStart is the feature list as it was when the session
	// started, to tell which features turned passing during it.
	featuresAtStart []state.Feature
	// sidecars are the session's running services; only its run
	// goroutine (and the start before it) touches them.
	sidecars []*sidecar
	// restartTimes are when the sessions before this one in its restart
	// chain were restarted, for max_restarts within restart_window.
	restartTimes []time.Time
}

type commandKind int

const (
	cmdStop commandKind = iota
	cmdExtend
)

// command is a request to a session's owner goroutine.
type command struct {
	kind   commandKind
	reason string        // cmdStop: end reason
	grace  time.Duration // cmdStop: -1 for the spec's stop_grace
	by     time.Duration // cmdExtend
	reply  chan error
}

// snapshot returns a copy of the record.
func (s *session) snapshot() ipc.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rec
	r.Command = append([]string(nil), r.Command...)
	r.FilesChanged = append([]string{}, r.FilesChanged...)
	if t := s.lastOutput.Load(); t != 0 && ipc.Live(r.State) {
		lo := time.Unix(0, t)
		if r.LastActivity == nil || lo.After(*r.LastActivity) {
			r.LastActivity = &lo
		}
	}
	return r
}

// update changes the record under the lock and writes it to disk.
func (s *session) update(f func(r *ipc.Session)) {
	s.mu.Lock()
	f(&s.rec)
	rec := s.rec
	s.mu.Unlock()
	s.persist(rec)
}

// set changes the record under the lock without writing it: for steps of
// a transition whose last step writes the record.
func (s *session) set(f func(r *ipc.Session)) {
	s.mu.Lock()
	f(&s.rec)
	s.mu.Unlock()
}

func (s *session) persist(rec ipc.Session) {
	if err := s.d.saveRecord(rec); err != nil {
		s.log.Error("write session record", zap.Error(err))
	}
}

func (s *session) emit(typ, msg string, data any) {
	ev := ipc.Event{Type: typ, SessionID: s.id, ProjectID: s.rec.ProjectID, Message: msg, UID: s.uid}
	if data != nil {
		ev.Data = eventData(data)
	}
	s.d.bus.publish(ev)
}

// notifyOutput records output activity and wakes log followers.
func (s *session) notifyOutput(t time.Time) {
	s.lastOutput.Store(t.UnixNano())
	s.outMu.Lock()
	close(s.output)
	s.output = make(chan struct{})
	s.outMu.Unlock()
}

// outputChanged returns a channel closed at the next write to the log.
func (s *session) outputChanged() <-chan struct{} {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return s.output
}

// lastActivity is the later of the last output and the last file change.
func (s *session) lastActivity() time.Time {
	t := time.Unix(0, s.lastOutput.Load())
	if s.lastOutput.Load() == 0 {
		t = s.startedAt
	}
	if fa := s.fileActivity(); fa.After(t) {
		t = fa
	}
	return t
}

// send delivers a command to the owner goroutine, or reports that the
// session has already ended.
func (s *session) send(ctx context.Context, c command) error {
	c.reply = make(chan error, 1)
	select {
	case s.cmds <- c:
	case <-s.done:
		return errEnded
	case <-ctx.Done():
		return ctx.Err()
	}
	// The session may end with the command still queued: its end answers.
	select {
	case err := <-c.reply:
		return err
	case <-s.done:
		return errEnded
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errEnded = errors.New("session has ended")

// timer is a stoppable one-shot timer whose channel is nil when unarmed,
// so that a select on it blocks forever.
type timer struct {
	t *time.Timer
}

func (t *timer) arm(at time.Time) {
	t.stop()
	t.t = time.NewTimer(time.Until(at))
}

func (t *timer) stop() {
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
}

func (t *timer) c() <-chan time.Time {
	if t.t == nil {
		return nil
	}
	return t.t.C
}

// run owns the live session until it ends. It first starts what runs
// beside the session (lock, watch, schedule), off the start request's path.
func (s *session) run() {
	defer s.d.wg.Done()
	s.afterSpawn()
	var warnT, deadT, idleT timer
	defer warnT.stop()
	defer deadT.stop()
	defer idleT.stop()
	rec := s.snapshot()
	if rec.State == ipc.StateStopping {
		// An adopted session whose stop the previous daemon began.
		s.stop(rec.EndReason, -1)
		return
	}
	if rec.State != ipc.StateWarned {
		warnT.arm(rec.WarnAt)
	}
	deadT.arm(rec.Deadline)
	if s.spec.IdleTimeout.Duration > 0 {
		idleT.arm(s.lastActivity().Add(s.spec.IdleTimeout.Duration))
	}
	for {
		select {
		case <-s.child.Done():
			s.end("", s.child.Exit(), false)
			return
		case <-warnT.c():
			warnT.stop()
			s.warn()
		case <-deadT.c():
			s.stop(ipc.EndTimeout, -1)
			return
		case <-idleT.c():
			next := s.lastActivity().Add(s.spec.IdleTimeout.Duration)
			if time.Now().Before(next) {
				idleT.arm(next)
				continue
			}
			s.stop(ipc.EndIdle, -1)
			return
		case c := <-s.cmds:
			switch c.kind {
			case cmdStop:
				c.reply <- nil
				s.stop(c.reason, c.grace)
				return
			case cmdExtend:
				c.reply <- s.extend(c.by)
				rec := s.snapshot()
				deadT.arm(rec.Deadline)
				if rec.State != ipc.StateWarned {
					warnT.arm(rec.WarnAt)
				}
			}
		}
	}
}

// stop ends the session: the stop signal to its group, the grace period,
// then SIGKILL to the group and every process of the session.
func (s *session) stop(reason string, grace time.Duration) {
	if grace < 0 {
		grace = s.spec.StopGrace.Duration
	}
	s.update(func(r *ipc.Session) { r.State = ipc.StateStopping; r.EndReason = reason })
	s.emit(ipc.EventStopping, fmt.Sprintf("stopping (%s): %s, then SIGKILL after %s", reason, s.spec.StopSignal, grace), nil)
	if err := proc.SignalGroup(s.child.PID, s.spec.StopSignal.Num); err != nil {
		s.log.Warn("send stop signal", zap.Error(err))
	}
	killed := false
	graceT := time.NewTimer(grace)
	defer graceT.Stop()
	for {
		select {
		case <-s.child.Done():
			s.end(reason, s.child.Exit(), killed)
			return
		case <-graceT.C:
			if !killed {
				killed = true
				s.killAll()
				// The leader is dead or unkillable (uninterruptible sleep);
				// give the reaper a bounded time before giving up on it.
				graceT.Reset(5 * time.Second)
				continue
			}
			s.log.Error("session leader did not exit after SIGKILL", zap.Int("pid", s.child.PID))
			s.end(reason, proc.Exit{Code: -1, Signal: "unknown"}, killed)
			return
		case c := <-s.cmds:
			switch c.kind {
			case cmdStop:
				// A second stop with a shorter grace hurries the first.
				if c.grace >= 0 && c.grace < grace && !killed {
					graceT.Reset(c.grace)
				}
				c.reply <- nil
			default:
				c.reply <- ipc.Conflict("session %s is stopping", s.id)
			}
		}
	}
}

// killAll sends SIGKILL to every process of the session, bounded in time.
func (s *session) killAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if left := proc.KillSession(ctx, s.id, s.child.PID, !s.adopted); len(left) > 0 {
		s.log.Error("processes of the session survived SIGKILL", zap.Ints("pids", left))
	}
}

// end records the session's end: leftovers killed, the record and the
// continuity files written, then the event. reason "" derives it from exit.
func (s *session) end(reason string, exit proc.Exit, killed bool) {
	// Nothing the session started outlives it.
	now := time.Now()
	s.killAll()
	devServer := s.stopSidecars()
	if reason == "" {
		reason = ipc.EndComplete
		if exit.Code != 0 {
			reason = ipc.EndError
		}
	}
	s.d.unwatchOutput(s)
	s.finishWork(now)
	// The state turns ended only once the handoff is on disk: whoever sees
	// the end can read it.
	s.set(func(r *ipc.Session) {
		r.EndedAt = &now
		r.EndReason = reason
		r.Signal = exit.Signal
		if exit.Code >= 0 {
			code := exit.Code
			r.ExitCode = &code
		}
		if t := s.lastOutput.Load(); t != 0 {
			lo := time.Unix(0, t)
			if r.LastActivity == nil || lo.After(*r.LastActivity) {
				r.LastActivity = &lo
			}
		}
	})
	s.writeContinuity(reason, devServer)
	s.update(func(r *ipc.Session) { r.State = ipc.StateEnded })
	rec := s.snapshot()
	s.log.Info("session ended", zap.String("reason", reason), zap.Intp("exit_code", rec.ExitCode), zap.String("signal", rec.Signal))
	close(s.done)
	s.emit(ipc.EventEnded, fmt.Sprintf("ended: %s", describeEnd(rec)), rec)
	s.d.sessionEnded(s)
}

func describeEnd(r ipc.Session) string {
	switch {
	case r.Signal != "":
		return fmt.Sprintf("%s (%s)", r.EndReason, r.Signal)
	case r.ExitCode != nil:
		return fmt.Sprintf("%s (exit %d)", r.EndReason, *r.ExitCode)
	}
	return r.EndReason
}

// signal sends sig to the session's process group.
func (s *session) signal(sig unix.Signal) error {
	return proc.SignalGroup(s.child.PID, sig)
}

func (s *session) logPath() string { return filepath.Join(s.dir, "output.log") }

// own hands files the daemon writes into a project to the session's user,
// when a root daemon runs the session for someone else: the agent must be
// able to read its context and state, and the user to remove them.
func (s *session) own(paths ...string) {
	cred := s.credential()
	if cred == nil {
		return
	}
	for _, p := range paths {
		if err := os.Lchown(p, int(cred.Uid), int(cred.Gid)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("hand file to the session's user", zap.String("path", p), zap.Error(err))
		}
	}
}
