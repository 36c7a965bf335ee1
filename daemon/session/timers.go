package session

import "time"

// due is what a session's timer fires for.
type due int

const (
	dueNone due = iota
	dueWarn
	dueDeadline
	dueIdle
	dueWaitWarn
	dueWaiting
	dueRead
	dueContinue
	dueStall
)

// timeline is the arithmetic of a session's clock: the deadline, the
// warning before it and idle detection. It is pure: the session arms one
// timer at next() and calls it again after every change.
type timeline struct {
	deadline   time.Time
	warnAt     time.Time
	warnBefore time.Duration
	warned     bool
	// idle is idle_timeout; 0 is off.
	idle time.Duration
	// waitTimeout is waiting_timeout (0 is off); waitingSince is when the
	// agent began to wait for input (zero while it does not), waitWarned
	// whether that wait's warning was given.
	waitTimeout  time.Duration
	waitingSince time.Time
	waitWarned   bool
	// readAt is when the agent's transcript is read next, while it works
	// (zero otherwise): an agent that retries its API says so only there.
	readAt time.Time
	// continueAt is when a session waiting for its agent's limit to reset
	// goes on (zero: it does not wait).
	continueAt time.Time
	// stall is stall_timeout (0 is off); progressAt the agent's last sign
	// of progress; stalled that this stall was told, or that the agent
	// does not work (nothing to watch for).
	stall      time.Duration
	progressAt time.Time
	stalled    bool
}

// next returns the time and kind of the next thing due, given when the
// session was last active. At one instant the warning comes before the
// deadline, and the deadline before idleness.
func (t timeline) next(lastActivity time.Time) (time.Time, due) {
	at, what := t.deadline, dueDeadline
	if !t.warned && !t.warnAt.After(at) {
		at, what = t.warnAt, dueWarn
	}
	if t.idle > 0 {
		if idleAt := lastActivity.Add(t.idle); idleAt.Before(at) {
			at, what = idleAt, dueIdle
		}
	}
	if t.waitTimeout > 0 && !t.waitingSince.IsZero() {
		// A wait is warned like a deadline: warn_before ahead, or halfway
		// through a waiting_timeout shorter than twice that.
		end := t.waitingSince.Add(t.waitTimeout)
		if !t.waitWarned {
			if warnAt := end.Add(-min(t.warnBefore, t.waitTimeout/2)); warnAt.Before(at) {
				at, what = warnAt, dueWaitWarn
			}
		} else if end.Before(at) {
			at, what = end, dueWaiting
		}
	}
	if !t.readAt.IsZero() && t.readAt.Before(at) {
		at, what = t.readAt, dueRead
	}
	if !t.continueAt.IsZero() && t.continueAt.Before(at) {
		at, what = t.continueAt, dueContinue
	}
	if t.stall > 0 && !t.stalled && !t.progressAt.IsZero() {
		if stallAt := t.progressAt.Add(t.stall); stallAt.Before(at) {
			at, what = stallAt, dueStall
		}
	}
	return at, what
}

// waitEnd is when a wait for input ends the session.
func (t timeline) waitEnd() time.Time { return t.waitingSince.Add(t.waitTimeout) }

// idleFor reports whether the session has been idle for its idle_timeout
// at now.
func (t timeline) idleFor(lastActivity, now time.Time) bool {
	return t.idle > 0 && !now.Before(lastActivity.Add(t.idle))
}

// extend moves the deadline later by by, and the warning with it; a
// warning already given is given again if its new time is still ahead.
func (t timeline) extend(by time.Duration, now time.Time) timeline {
	t.deadline = t.deadline.Add(by)
	t.warnAt = t.deadline.Add(-t.warnBefore)
	if t.warned && t.warnAt.After(now) {
		t.warned = false
	}
	return t
}
