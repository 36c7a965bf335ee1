package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Reason is why a session ended; what follows from each is its entry in
// ipc.Ends, and the warning its handoff gives (warnings).
type Reason string

// End reasons (DESIGN §4).
const (
	Complete    Reason = ipc.EndComplete
	Error       Reason = ipc.EndError
	Timeout     Reason = ipc.EndTimeout
	Idle        Reason = ipc.EndIdle
	Interrupted Reason = ipc.EndInterrupted
	Crashed     Reason = ipc.EndCrashed
	Waiting     Reason = ipc.EndWaiting
	Budget      Reason = ipc.EndBudget
	OOM         Reason = ipc.EndOOM
)

// warnings are what the handoff tells the next session after an end of
// each reason (ipc.Ends holds the rest of what follows from it); a reason
// without one tells nothing.
var warnings = map[Reason]func(spec config.Spec, end string) string{
	Error: func(_ config.Spec, end string) string {
		return "the command failed (" + end + "): see log_tail"
	},
	Timeout: func(spec config.Spec, _ string) string {
		return "the session hit its deadline (" + spec.Timeout.String() + "): work may be unfinished mid-step"
	},
	Idle: func(spec config.Spec, _ string) string {
		return "the session was stopped after " + spec.IdleTimeout.String() + " without output or file changes: it may have been stuck"
	},
	Crashed: func(config.Spec, string) string {
		return "the session's end was not observed, so its exit status is unknown: check the work tree before going on"
	},
	HostRebooted: func(config.Spec, string) string {
		return "the host went down during the session (a reboot, a power loss): its exit status is unknown and work may be unfinished mid-step; check the work tree before going on"
	},
	Waiting: func(spec config.Spec, _ string) string {
		return "the session was stopped after its agent waited " + spec.WaitingTimeout.String() + " for input (waiting_timeout): answer what it asked, then resume its conversation"
	},
	Budget: func(spec config.Spec, _ string) string {
		var caps []string
		if spec.MaxTokens > 0 {
			caps = append(caps, fmt.Sprintf("max_tokens %d", spec.MaxTokens))
		}
		if spec.MaxCostUSD > 0 {
			caps = append(caps, fmt.Sprintf("max_cost_usd %.2f", spec.MaxCostUSD))
		}
		return "the session was stopped at its budget (" + strings.Join(caps, ", ") + "): work may be unfinished mid-step"
	},
}

// policy is what follows from an end reason.
type policy struct {
	ipc.End
	// warning is what the handoff tells the next session, nil for nothing.
	warning func(spec config.Spec, end string) string
}

func (r Reason) policy() policy {
	if e, ok := ipc.EndOf(string(r)); ok {
		return policy{End: e, warning: warnings[r]}
	}
	return policy{End: ipc.End{Status: state.TaskInProgress}}
}

// Valid reports whether r is a known end reason.
func (r Reason) Valid() bool {
	_, ok := ipc.EndOf(string(r))
	return ok
}

// reasonOf derives the reason of an exit nobody asked for.
func reasonOf(code int) Reason {
	if code == 0 {
		return Complete
	}
	return Error
}

// RestartDecision says whether and when a session that ended for reason
// is restarted: the spec's restart policy, at most max_restarts within
// restart_window (history holds when the chain's earlier restarts were),
// with exponential backoff. exitKnown is false for an adopted session,
// whose exit status nobody saw: on-failure does not restart it, as it may
// well have completed.
func RestartDecision(spec config.Spec, reason Reason, exitKnown bool, history []time.Time, now time.Time) Restart {
	p := reason.policy()
	switch {
	case p.Requested || spec.Restart == config.RestartNo || spec.Restart == "":
		return Restart{}
	case spec.Restart == config.RestartOnFailure && !p.Failure:
		return Restart{}
	case spec.Restart == config.RestartOnFailure && reason == Error && !exitKnown:
		return Restart{Why: "not restarted: exit status unknown (adopted session)"}
	}
	var recent []time.Time
	for _, t := range history {
		if now.Sub(t) < spec.RestartWindow.Duration {
			recent = append(recent, t)
		}
	}
	if len(recent) >= spec.MaxRestarts {
		return Restart{Limited: true, Why: fmt.Sprintf("not restarted: %d restarts within %s (max_restarts)", len(recent), spec.RestartWindow)}
	}
	return Restart{Yes: true, Delay: restartDelay(len(recent) + 1), History: append(recent, now)}
}

// Restart is a restart decision.
type Restart struct {
	Yes   bool
	Delay time.Duration
	// History is the chain's restart times for the new session.
	History []time.Time
	// Limited is set when max_restarts stopped it.
	Limited bool
	// Why says why not, when there is something to say.
	Why string
}

// Restart backoff: exponential from restartBackoffMin to restartBackoffMax.
const (
	restartBackoffMin = time.Second
	restartBackoffMax = time.Minute
)

// restartDelay is the backoff before restart number n (1-based) in a window.
func restartDelay(n int) time.Duration {
	d := restartBackoffMin
	for i := 1; i < n && d < restartBackoffMax; i++ {
		d *= 2
	}
	return min(d, restartBackoffMax)
}
