package ipc

import (
	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc/format"
)

// Exit statuses for ends that are not the command's own exit, as
// `sessiond exec` and `sessionctl start --wait` give them; the command's own
// exit code passes through, and a death by signal N is 128+N.
const (
	ExitTimeout = 124 // the deadline came (timeout(1)'s code)
	ExitIdle    = 121 // idle_timeout passed without output or file changes
	ExitBudget  = 122 // the token or cost budget was spent
	ExitWaiting = 123 // the agent waited for input longer than waiting_timeout
	ExitFailed  = 1   // the session could not start, or its status is unknown
)

// End is what follows from one end reason: the one table of them, which
// the session's end, the restart policy, the handoff, the exit status and
// the metrics all read. Adding an end reason is one entry in Ends (and, if
// the next session must be told something, a warning in package session).
type End struct {
	Reason string
	// Exit is the exit status an end of this reason gives; 0 passes the
	// command's own through.
	Exit int
	// Failure: restart = "on-failure" restarts the session after it.
	Failure bool
	// Requested: the end was asked for; no restart policy restarts it.
	Requested bool
	// Status is the handoff's task status when the agent reported none.
	Status string
}

// Ends are the end reasons (DESIGN §4).
var Ends = []End{
	{Reason: EndComplete, Status: format.TaskCompleted},
	{Reason: EndError, Failure: true, Status: format.TaskFailed},
	{Reason: EndTimeout, Exit: ExitTimeout, Status: format.TaskInProgress},
	{Reason: EndIdle, Exit: ExitIdle, Status: format.TaskInProgress},
	{Reason: EndInterrupted, Requested: true, Status: format.TaskInProgress},
	{Reason: EndCrashed, Failure: true, Status: format.TaskInProgress},
	{Reason: EndWaiting, Exit: ExitWaiting, Status: format.TaskInProgress},
	// A spent budget is not restarted: a restart would spend more.
	{Reason: EndBudget, Exit: ExitBudget, Requested: true, Status: format.TaskInProgress},
	// The kernel's OOM killer ended a process at the session's memory
	// bound: on-failure restarts it, with the backoff and max_restarts
	// of every failure.
	{Reason: EndOOM, Failure: true, Status: format.TaskFailed},
	// A usage limit: the limits' policy (on_limit) says what follows, not
	// the restart policy; a scheduler retries it later (EX_TEMPFAIL).
	{Reason: EndLimit, Exit: ExitLimit, Requested: true, Status: format.TaskInProgress},
	// The host went down under the session: resume_after_reboot, not the
	// restart policy, starts it again.
	{Reason: EndHostRebooted, Requested: true, Status: format.TaskInProgress},
	// A queued session stopped before it ran: nothing was done.
	{Reason: EndCancelled, Requested: true, Status: format.TaskInProgress},
}

// EndLabel is how an end reason reads to a person: the reason itself,
// except crashed, whose end no daemon saw, which reads "unobserved".
func EndLabel(reason string) string {
	if reason == EndCrashed {
		return "unobserved"
	}
	return reason
}

// EndOf returns the entry of reason, false for a reason that is none.
func EndOf(reason string) (End, bool) {
	for _, e := range Ends {
		if e.Reason == reason {
			return e, true
		}
	}
	return End{}, false
}

// ExitStatus maps a session's end to a process exit status.
func ExitStatus(r *Session) int {
	if e, ok := EndOf(r.EndReason); ok && e.Exit != 0 {
		return e.Exit
	}
	if r.ExitCode != nil {
		return *r.ExitCode
	}
	if r.Signal != "" {
		if s, err := config.ParseSignal(r.Signal); err == nil {
			return 128 + int(s.Num)
		}
	}
	return ExitFailed
}
