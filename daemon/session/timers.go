package session

import "time"

// due is what a session's timer fires for.
type due int

const (
	dueNone due = iota
	dueWarn
	dueDeadline
	dueIdle
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
	return at, what
}

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
