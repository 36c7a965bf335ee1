package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// hookTimeout bounds the on_warning hook; it never delays the stop.
const hookTimeout = 30 * time.Second

// warn gives the session its warning: state, file, event, hook and, only
// when the spec asks, the signal to processes that catch it.
func (s *session) warn() {
	now := time.Now()
	rec := s.snapshot()
	// In-band first, so that an agent woken by the signal finds the file
	// and its state already warned.
	s.writeWarningFile(rec.Deadline, now)
	w := ipc.Warning{At: now, Hook: s.spec.OnWarning, Signal: s.spec.WarnSignal.Name}
	s.update(func(r *ipc.Session) { r.State = ipc.StateWarned; r.Warning = &w })
	s.emit(ipc.EventWarned, ipc.WarningText(rec.Deadline, now), w)
	if s.spec.OnWarning != "" {
		s.runHook(s.spec.OnWarning)
	}
	if sig := s.spec.WarnSignal; sig.Num != 0 {
		for _, pid := range s.procs() {
			if !s.spec.WarnSignalForce {
				catches, err := proc.Catches(pid, sig.Num)
				if err != nil {
					w.Skipped = append(w.Skipped, ipc.SkippedProc{PID: pid, Reason: err.Error()})
					continue
				}
				if !catches {
					w.Skipped = append(w.Skipped, ipc.SkippedProc{PID: pid, Reason: "does not catch " + sig.Name + " (it would die)"})
					continue
				}
			}
			if err := proc.Signal(pid, sig.Num); err != nil {
				w.Skipped = append(w.Skipped, ipc.SkippedProc{PID: pid, Reason: err.Error()})
				continue
			}
			w.Signaled = append(w.Signaled, pid)
		}
		s.update(func(r *ipc.Session) { r.Warning = &w })
	}
	s.log.Info("session warned", zap.Time("deadline", rec.Deadline), zap.Ints("signaled", w.Signaled))
}

// procs returns the session's live processes, the leader first.
func (s *session) procs() []int {
	out := []int{s.child.PID}
	for _, pid := range proc.SessionProcs(s.id, s.child.PID, !s.adopted) {
		if pid != s.child.PID {
			out = append(out, pid)
		}
	}
	return out
}

func (s *session) writeWarningFile(deadline, now time.Time) {
	left := deadline.Sub(now).Round(time.Second)
	w := &state.Warning{SessionID: s.id, WarnedAt: now, Deadline: deadline,
		TimeLeftSeconds: int64(left / time.Second), Message: ipc.WarningText(deadline, now)}
	if err := state.WriteWarning(s.projectDir, w); err != nil {
		s.log.Warn("write warning file", zap.Error(err))
	}
	s.own(state.WarningPath(s.projectDir))
}

// runHook runs the on_warning hook in the background, bounded in time, with
// the session's environment; a failure is logged, never fatal.
func (s *session) runHook(command string) {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = s.projectDir
	cmd.Env = s.env()
	cmd.Stdout, cmd.Stderr = nil, nil
	if f, err := os.OpenFile(s.logPath(), os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		cmd.Stdout, cmd.Stderr = f, f
		defer f.Close()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.credential()}
	if err := proc.Start(cmd); err != nil {
		s.log.Warn("on_warning hook did not start", zap.Error(err))
		return
	}
	log := s.log
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- proc.Wait(cmd) }()
		select {
		case err := <-done:
			if err != nil {
				log.Warn("on_warning hook failed", zap.Error(err))
			}
		case <-ctx.Done():
			_ = proc.SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
			<-done
			log.Warn("on_warning hook killed after timeout", zap.Duration("timeout", hookTimeout))
		}
	}()
}

// extend moves the deadline and the warning later; a warning already given
// is given again at the new time.
func (s *session) extend(by time.Duration) error {
	if by <= 0 {
		return ipc.BadRequest("extend by %s: want a positive duration", by)
	}
	var rec ipc.Session
	s.update(func(r *ipc.Session) {
		r.Deadline = r.Deadline.Add(by)
		r.WarnAt = r.Deadline.Add(-s.spec.WarnBefore.Duration)
		if r.State == ipc.StateWarned && r.WarnAt.After(time.Now()) {
			r.State = ipc.StateRunning
		}
		rec = *r
	})
	if rec.State == ipc.StateWarned {
		s.writeWarningFile(rec.Deadline, time.Now())
	} else if err := state.RemoveWarning(s.projectDir); err != nil {
		s.log.Warn("remove warning file", zap.Error(err))
	}
	s.emit(ipc.EventExtended, fmt.Sprintf("deadline moved to %s", rec.Deadline.Format(time.RFC3339)),
		map[string]any{"deadline": rec.Deadline, "warn_at": rec.WarnAt})
	return nil
}
