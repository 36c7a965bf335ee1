package ipc

import (
	"context"
	"time"
)

// StateQueued is a session that waits for its turn: a slot of its pool, a
// session it starts after, or the time its agent's limit resets. It holds
// its name and its project as a live session does, and runs nothing.
const StateQueued = "queued"

// End reasons of the limits and the queue.
const (
	// EndLimit: the agent hit a usage limit it could not go on through
	// (on_limit = "stop", or a limit nothing resets, such as spent credit).
	EndLimit = "limit"
	// EndHostRebooted: the session was live when its host went down.
	EndHostRebooted = "host_rebooted"
	// EndCancelled: a queued session was stopped before it ever ran.
	EndCancelled = "cancelled"
)

// ExitLimit is the exit status of an end at a limit (EX_TEMPFAIL):
// schedulers retry it later.
const ExitLimit = 75

// Agent states of the limits (Agent.State).
const (
	// AgentLimited is an agent stopped by a usage limit (Agent.Limit).
	AgentLimited = "limited"
	// AgentStalled is a working agent that made no progress (no
	// transcript, no output, no file change) for stall_timeout.
	AgentStalled = "stalled"
)

// Limit classes (AgentLimit.Class).
const (
	// LimitQuota is a usage quota with a reset time (a plan's 5-hour or
	// weekly limit, Codex's usage_limit_reached).
	LimitQuota = "quota"
	// LimitThrottle is a transient refusal: a rate limit, an overloaded
	// API (429, 529), which the agent retries itself.
	LimitThrottle = "throttle"
	// LimitSpend is money: credit spent, a billing error, a spend cap.
	LimitSpend = "spend"
	// LimitAuth is a key or a login that is refused.
	LimitAuth = "auth"
)

// How a session stopped by a limit goes on once it resets
// (AgentLimit.Continue).
const (
	// ContinueResume starts its command again with the agent's
	// conversation resumed (a headless session whose command exited).
	ContinueResume = "resume"
	// ContinueType types "continue" into its terminal (an interactive one).
	ContinueType = "type"
	// ContinueAgent leaves it to the agent, which goes on by itself (its
	// own auto-continue or retry watchdog is on).
	ContinueAgent = "agent"
	// ContinueNone: nothing continues it (on_limit is not wait, or the
	// limit is not one that resets).
	ContinueNone = "none"
)

// AgentLimit is a usage limit the agent hit: its Class, the Account it
// counts against, when it resets (zero: not said), and what it said.
type AgentLimit struct {
	Class   string    `json:"class"`
	Account string    `json:"account,omitempty"`
	Since   time.Time `json:"since"`
	// ResetsAt is when the limit lifts, as the agent said; zero when it
	// did not.
	ResetsAt time.Time `json:"resets_at,omitzero"`
	// Message is the agent's own words, cut to a line.
	Message string `json:"message,omitempty"`
	// Source is where sessiond read it: "StopFailure", "transcript",
	// "output", "event".
	Source string `json:"source,omitempty"`
	// Continue is how the session goes on (ContinueResume, ...), at
	// ContinueAt (the reset and its jitter).
	Continue   string    `json:"continue,omitempty"`
	ContinueAt time.Time `json:"continue_at,omitzero"`
	// PausedSeconds is how far the deadline moved for the wait.
	PausedSeconds int64 `json:"paused_seconds,omitempty"`
}

// QueuePlace is where a queued session stands, and what it waits for.
type QueuePlace struct {
	// Pool is the pool it waits for a slot of; Place its place in the
	// whole queue (1 is next), filled in when the queue is listed.
	Pool  string `json:"pool,omitempty"`
	Place int    `json:"place,omitempty"`
	// Account is its agent's account, whose quota's reset holds it.
	Account string `json:"account,omitempty"`
	// Priority orders the queue: higher first, then interactive before
	// batch, then first come.
	Priority int `json:"priority,omitempty"`
	// After is a session to start after: once it has ended successfully,
	// or, with AfterAny, once it has ended at all.
	After    string `json:"after,omitempty"`
	AfterAny bool   `json:"after_any,omitempty"`
	// NotBefore is the earliest start (a limit's reset and its jitter).
	NotBefore time.Time `json:"not_before,omitzero"`
	// Since is when it was queued; Why what holds it now, in words.
	Since time.Time `json:"since"`
	Why   string    `json:"why,omitempty"`
	// Reason is why it was queued: "pool", "after", "limit", "reboot".
	Reason string `json:"reason,omitempty"`
}

// Why a session was queued (QueuePlace.Reason).
const (
	QueuedForPool   = "pool"
	QueuedForAfter  = "after"
	QueuedForLimit  = "limit"
	QueuedForReboot = "reboot"
)

// Pool is what a pool is now: its bound, what runs and waits in it, and
// until when its quota is limited.
type Pool struct {
	Name string `json:"name"`
	// MaxRunning is its bound (0: none); StaggerMS the least time between
	// two of its starts.
	MaxRunning int   `json:"max_running,omitempty"`
	StaggerMS  int64 `json:"stagger_ms,omitempty"`
	Running    int   `json:"running"`
	Queued     int   `json:"queued"`
	// LimitedUntil is the reset of the quota one of its sessions hit:
	// nothing new starts in it before then.
	LimitedUntil time.Time `json:"limited_until,omitzero"`
}

// QueueListing is GET /v1/queue: the pools, and the queued sessions in
// the order they will start.
type QueueListing struct {
	Pools  []Pool       `json:"pools"`
	Queued []SessionRow `json:"queued"`
}

// Queue is the queue API: GET /v1/queue.
type Queue interface {
	// ListQueue lists the pools and the caller's queued sessions (root:
	// everyone's), in the order they will start.
	ListQueue(ctx context.Context, c Caller) (*QueueListing, error)
}

// Queue lists the pools and the queued sessions.
func (c *Client) Queue(ctx context.Context) (*QueueListing, error) {
	return do[*QueueListing](ctx, c, "GET", "/queue", nil, nil)
}

// Words say a limit as ps and the dashboard do: "quota, resets 15:04:05"
// (with its day when that is not today, in the local zone).
func (l *AgentLimit) Words(now time.Time) string {
	w := l.Class
	if !l.ResetsAt.IsZero() {
		t, n := l.ResetsAt.Local(), now.Local()
		if t.YearDay() != n.YearDay() || t.Year() != n.Year() {
			w += ", resets " + t.Format("Jan 2 15:04:05")
		} else {
			w += ", resets " + t.Format(time.TimeOnly)
		}
	}
	return w
}
