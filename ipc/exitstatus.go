package ipc

import "github.com/sessiond/sessiond/config"

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

// ExitStatus maps a session's end to a process exit status.
func ExitStatus(r *Session) int {
	switch r.EndReason {
	case EndTimeout:
		return ExitTimeout
	case EndIdle:
		return ExitIdle
	case EndBudget:
		return ExitBudget
	case EndWaiting:
		return ExitWaiting
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
