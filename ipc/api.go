package ipc

import (
	"context"
	"io"
	"time"
)

// Caller is the identity of the process at the other end of a connection,
// from the socket's peer credentials.
type Caller struct {
	UID int
	GID int
	PID int
}

// Root reports whether the caller is the superuser, who may act on every
// user's sessions.
func (c Caller) Root() bool { return c.UID == 0 }

// ListOptions filters a session listing.
type ListOptions struct {
	// All includes ended and failed sessions.
	All bool
	// Project keeps only the sessions of this directory (absolute path).
	Project string
	// Chains lists every session of a restart chain; by default only the
	// latest of each chain is listed, with its restarts count.
	Chains bool
	// Stats adds the CPU and memory use of each live session's tree.
	Stats bool
}

// LogOptions says which part of a session's log to send.
type LogOptions struct {
	// Tail sends only the last Tail lines; 0 sends the whole log.
	Tail int
	// Follow keeps sending output as it is written, until the session
	// ends or the request is cancelled.
	Follow bool
	// Timestamps prefixes each line with the time it was seen
	// (TimestampFormat and a space).
	Timestamps bool
	// Since and Until, when set, send only the lines seen in that range.
	Since, Until time.Time
	// Raw sends the log's bytes as they are; otherwise its control
	// sequences are stripped (the output of another user's session never
	// reaches a terminal raw).
	Raw bool
}

// EventOptions says which events to send.
type EventOptions struct {
	// Follow streams new events as they happen; otherwise the recent
	// events the daemon keeps are sent and the stream ends.
	Follow bool
}

// The interfaces below are what the server adapts requests to; the daemon
// implements them. Every method takes the caller, so that it decides what
// the caller may see and do. Errors of type *Error reach the client as they
// are; any other error is an internal error.

// Sessions is the session API: /v1/sessions and below.
type Sessions interface {
	ListSessions(ctx context.Context, c Caller, opt ListOptions) ([]Session, error)
	// ListSessionRows is ListSessions as table rows (Session.Row), made
	// without whole records on the way, appended to dst (which the
	// server keeps from one listing to the next).
	ListSessionRows(ctx context.Context, c Caller, opt ListOptions, dst []SessionRow) ([]SessionRow, error)
	StartSession(ctx context.Context, c Caller, req StartRequest) (*StartResponse, error)
	GetSession(ctx context.Context, c Caller, id string) (*Session, error)
	// StartSessions starts a session for each request, at once.
	StartSessions(ctx context.Context, c Caller, reqs []StartRequest) ([]StartResult, error)
	// StopSessions stops several sessions at once and returns once each
	// end is on disk.
	StopSessions(ctx context.Context, c Caller, req StopBatchRequest) ([]StopResult, error)
	// StopSession returns once the session's end is on disk.
	StopSession(ctx context.Context, c Caller, id string, req StopRequest) (*Session, error)
	SignalSession(ctx context.Context, c Caller, id string, req SignalRequest) error
	ExtendSession(ctx context.Context, c Caller, id string, req ExtendRequest) (*Session, error)
	// ReportSession records what the agent reports from inside the session
	// and returns the merged report.
	ReportSession(ctx context.Context, c Caller, id string, rep Report) (*Report, error)
	// RestartSession stops the session if it runs, then starts the same
	// spec in the same project as its successor (restart_of).
	RestartSession(ctx context.Context, c Caller, id string, req RestartRequest) (*StartResponse, error)
	// RemoveSession removes an ended session's record, logs and handoff
	// archive (never the project's files).
	RemoveSession(ctx context.Context, c Caller, id string) error
	// PruneSessions removes the caller's ended sessions older than asked.
	PruneSessions(ctx context.Context, c Caller, req PruneRequest) (*PruneResponse, error)
	CheckpointSession(ctx context.Context, c Caller, id string) (*CheckpointResult, error)
	// AgentHook applies one payload of the session's agent's hooks and
	// answers what the hook tells the agent.
	AgentHook(ctx context.Context, c Caller, id string, req AgentHookRequest) (*AgentHookResponse, error)
	SessionHandoff(ctx context.Context, c Caller, id string) (*Handoff, error)
	// SessionBriefing is what the session started from, for its agent.
	SessionBriefing(ctx context.Context, c Caller, id string) (*Briefing, error)
}

// Logs is a session's output: /v1/sessions/{id}/logs.
type Logs interface {
	// SessionLogs writes the session's output to w, flushing as it goes.
	SessionLogs(ctx context.Context, c Caller, id string, opt LogOptions, w io.Writer) error
}

// Projects is the project API: /v1/projects and below.
type Projects interface {
	ListProjects(ctx context.Context, c Caller) ([]Project, error)
	ProjectSession(ctx context.Context, c Caller, p ProjectRef) (*ProjectSession, error)
	ClearProjectSession(ctx context.Context, c Caller, p ProjectRef) error
	// ResolveBlockers resolves open blockers of the project, from outside
	// any session: in its live sessions, else in its session state.
	ResolveBlockers(ctx context.Context, c Caller, p ProjectRef, req ResolveRequest) (*ResolveResponse, error)
	ProjectCheckpoints(ctx context.Context, c Caller, p ProjectRef, opt CheckpointsOptions) ([]Checkpoint, error)
	RestoreProject(ctx context.Context, c Caller, p ProjectRef, req RestoreRequest) (*RestoreResponse, error)
	// CheckpointStats says what the project's checkpoints hold on disk.
	CheckpointStats(ctx context.Context, c Caller, p ProjectRef) (*CheckpointStats, error)
}

// Events is the event stream: /v1/events.
type Events interface {
	// Subscribe returns the events for c: with opt.Follow the stream of new
	// events, closed when ctx ends; without, the recent events, then closed.
	Subscribe(ctx context.Context, c Caller, opt EventOptions) (<-chan Event, error)
}

// System is the daemon's own information: /v1/version and /v1/health.
type System interface {
	Version(ctx context.Context) Version
	Health(ctx context.Context, c Caller) Health
	// Warning is Health's Warning, cheap enough for every answer.
	Warning() string
}

// Services are what the server serves, one service per interface, each
// implemented where its resource lives and each wired (or faked) alone.
type Services struct {
	Sessions      Sessions
	Logs          Logs
	Terminals     Terminals
	Projects      Projects
	Events        Events
	System        System
	Notifications Notifications
	Worktrees     Worktrees
	Queue         Queue
}
