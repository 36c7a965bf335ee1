package mcp

import (
	"context"
	"errors"
	"time"
)

// Daemon is what the server needs of sessiond, for the session it serves.
// Every method is called with the session's id and a context that ends
// when the tool call does (the client cancelled it or went away).
type Daemon interface {
	// Remaining returns the session's time and budget.
	Remaining(ctx context.Context, session string) (Remaining, error)
	// Report records what the agent reports; fields left zero are kept as
	// they were.
	Report(ctx context.Context, session string, r Report) (ReportResult, error)
	// Checkpoint takes a checkpoint of the project now.
	Checkpoint(ctx context.Context, session string) (Checkpoint, error)
	// Briefing returns the previous session's handoff and the next task.
	Briefing(ctx context.Context, session string) (Briefing, error)
	// Extend moves the deadline by. The daemon enforces the spec's cap and
	// refuses with an error wrapping ErrExtendRefused beyond it.
	Extend(ctx context.Context, session string, by time.Duration) (Extension, error)
}

// ErrExtendRefused is an extension the spec does not allow (no
// agent_may_extend, or beyond what is left of it).
var ErrExtendRefused = errors.New("extension refused")

// Remaining is a session's time and budget.
type Remaining struct {
	// State is the session's state (running, warned, stopping...).
	State string
	// Deadline and WarnAt are zero when the session has none.
	Deadline time.Time
	WarnAt   time.Time
	// Left is the time to the deadline, zero once passed.
	Left time.Duration
	// Warned is whether the session got its warning.
	Warned bool
	// ExtendCap is the spec's agent_may_extend; ExtendLeft what is left of
	// it after the agent's earlier extensions. Zero: the agent may not.
	ExtendCap  time.Duration
	ExtendLeft time.Duration
	// Budget is the session's token and cost use against its caps.
	Budget Budget
}

// Budget is token and cost use against the caps; a zero cap is no cap.
type Budget struct {
	Tokens     int64
	MaxTokens  int64
	CostUSD    float64
	CostKnown  bool
	MaxCostUSD float64
}

// Report is what the agent tells of its work.
type Report struct {
	Summary string
	Next    []string
	// BlockersAdd are new open questions; BlockersResolve the ids of
	// earlier ones now answered.
	BlockersAdd     []Blocker
	BlockersResolve []int
	Plan            string
	// Progress is percent done, nil when not reported.
	Progress *float64
	Task     string
	// StepCurrent of StepTotal, both zero when not reported.
	StepCurrent, StepTotal int
	// Status is completed, in_progress, blocked or failed.
	Status string
}

// Blocker is an open question that needs a person.
type Blocker struct {
	// ID is the daemon's number for it; zero in a report that adds it.
	ID       int
	Question string
	// Priority is high, medium or low; "" is the daemon's default.
	Priority string
}

// ReportResult is the state of the reported fields after the report.
type ReportResult struct {
	// Blockers are the open ones, with their ids.
	Blockers []Blocker
}

// Checkpoint is a checkpoint taken on request.
type Checkpoint struct {
	// ID is the checkpoint's commit; "" when nothing had changed.
	ID           string
	FilesChanged int
	Message      string
	// Skipped says why no checkpoint was taken (nothing changed).
	Skipped string
}

// Briefing is what the session started from.
type Briefing struct {
	// Previous is the previous session's handoff; nil for a first session.
	Previous *Handoff
	// NextTask is the most urgent task of the feature list not done yet;
	// nil without a feature list.
	NextTask *Task
	// NextActions are the project's next actions from its session state.
	NextActions []string
	// Blockers are the open questions.
	Blockers []Blocker
	// ProgressPct, TasksDone and TasksTotal are the feature list's.
	ProgressPct           float64
	TasksDone, TasksTotal int
}

// Handoff is the part of a previous session's handoff an agent needs.
type Handoff struct {
	SessionID            string
	EndedAt              time.Time
	EndReason            string
	Summary              string
	TaskAttempted        string
	TaskStatus           string
	CurrentStep          string
	BlockedReason        string
	RecommendedNextSteps []string
	Warnings             []string
	UncommittedFiles     []string
	ConversationID       string
}

// Task is an item of the feature list.
type Task struct {
	ID          string
	Description string
	Priority    string
}

// Extension is a moved deadline.
type Extension struct {
	Deadline time.Time
	// Left is the time to the new deadline; ExtendLeft what the agent may
	// still extend.
	Left       time.Duration
	ExtendLeft time.Duration
}
