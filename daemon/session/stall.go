package session

import (
	"fmt"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// A working agent stalls when nothing shows it getting anywhere for
// stall_timeout: no event of its own but its API's failed requests (its
// retries are no progress; a response is), no file change and, off a
// terminal, no output (a terminal's spinner is no progress either).

// progressed notes the agent's sign of progress at now.
func (s *Session) progressed(now time.Time) {
	s.timeline.progressAt = now
	if rec := s.rec.Agent; rec != nil && rec.State == ipc.AgentStalled {
		s.setAgentState(ipc.AgentWorking, "", now)
	}
}

// lastProgress is the latest sign of progress: the agent's own, a file
// change and, off a terminal, output.
func (s *Session) lastProgress() time.Time {
	t := s.timeline.progressAt
	if s.watch != nil {
		if fa := s.watch.Stats().LastActivity; fa.After(t) {
			t = fa
		}
	}
	if !s.onTerminal() {
		if lo := s.lastOutput.Load(); lo != 0 && time.Unix(0, lo).After(t) {
			t = time.Unix(0, lo)
		}
	}
	return t
}

// checkStall makes a working agent that made no progress for stall_timeout
// stalled: an event, and its warning (file, state, hooks, notifications).
func (s *Session) checkStall() {
	rec := s.rec.Agent
	now := s.deps.Clock.Now()
	last := s.lastProgress()
	s.timeline.progressAt = last
	if rec == nil || rec.State != ipc.AgentWorking || now.Sub(last) < s.spec.StallTimeout.Duration {
		return
	}
	s.timeline.stalled = true
	why := "no progress"
	if r := rec.Retrying; r != nil {
		why = fmt.Sprintf("retrying its API since %s (%s)", r.Since.Format(time.TimeOnly), r.Reason)
	}
	text := fmt.Sprintf("sessiond: the agent has made no progress for %s (%s): no transcript, no output, no file change (stall_timeout %s). If it is stuck, stop or restart it.",
		now.Sub(last).Round(time.Second), why, s.spec.StallTimeout)
	// The warning first (state, file, signal), then the agent's state:
	// whoever sees the agent stalled finds the session warned and the
	// warning file written.
	s.give(warning{reason: warnStalled, deadline: s.rec.Deadline, text: text})
	s.setAgentState(ipc.AgentStalled, "", now)
	s.recDirty = true
	s.emit(ipc.EventAgentStalled, text, map[string]any{"agent": rec.Name, "since": last, "stall_timeout": s.spec.StallTimeout.String()})
}
