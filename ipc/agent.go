package ipc

import "time"

// Agent states of Agent.State: what the agent does, as its own events tell
// (never guessed from its screen).
const (
	AgentWorking = "working"
	AgentWaiting = "waiting"
	AgentIdle    = "idle"
	AgentUnknown = "unknown"
)

// Agent is what sessiond knows of the coding agent a session runs: which
// one, its conversation, and what it is doing.
type Agent struct {
	// Name is the adapter: "claude-code", "codex" or "generic".
	Name string `json:"name"`
	// Integrated is whether sessiond hears from the agent (its hooks or
	// notify program are installed); without, State stays unknown.
	Integrated bool `json:"integrated"`
	// Interactive is an agent run for a person at its terminal: the end of
	// a turn is waiting for the next prompt.
	Interactive bool `json:"interactive,omitempty"`
	// ConversationID and TranscriptPath are the agent's conversation, once
	// known (chosen by sessiond, or told by the agent's first hook).
	ConversationID string `json:"conversation_id,omitempty"`
	TranscriptPath string `json:"transcript_path,omitempty"`
	// ResumedFrom is the conversation this session continues, if any.
	ResumedFrom string `json:"resumed_from,omitempty"`
	// State is working, waiting, idle or unknown, since StateSince.
	State      string     `json:"state"`
	StateSince *time.Time `json:"state_since,omitempty"`
	// WaitingReason says what a waiting agent waits for: "permission:
	// Bash", "question: ...", "prompt" (the next prompt).
	WaitingReason string `json:"waiting_reason,omitempty"`
	// Retrying, while the agent retries failed requests to its model's
	// API (its own transcript tells), says since when and why; nil once a
	// request went through.
	Retrying *AgentRetry `json:"retrying,omitempty"`
	// Limit is the usage limit the agent hit, while it holds (State
	// limited), and at the end of a session it ended.
	Limit *AgentLimit `json:"limit,omitempty"`
	// Account is the identity the agent's use counts against: its config
	// directory, or its API key's fingerprint ("" when unknown).
	Account string `json:"account,omitempty"`
	// Turns counts the agent's finished turns; LastPrompt is the first line
	// of the latest turn's prompt.
	Turns      int    `json:"turns,omitempty"`
	LastPrompt string `json:"last_prompt,omitempty"`
	// Extended is how much the agent has moved its deadline through its
	// MCP tools, against the spec's agent_may_extend.
	ExtendedSeconds int64 `json:"extended_seconds,omitempty"`
	// Notices say what could not be integrated or read, one sentence each.
	Notices []string `json:"notices,omitempty"`
}

// AgentRetry is an agent retrying its API: the spell began at Since (the
// first failed request), the latest of Attempts (of at most MaxAttempts,
// 0 when the agent does not say) failed for Reason ("529 Overloaded"), and
// the next is due at NextAt.
type AgentRetry struct {
	Since       time.Time `json:"since"`
	Attempts    int       `json:"attempts"`
	MaxAttempts int       `json:"max_attempts,omitempty"`
	Reason      string    `json:"reason"`
	NextAt      time.Time `json:"next_at,omitzero"`
}

// Worktree is the git worktree a session runs in.
type Worktree struct {
	// Name is the worktree's name; Branch is sessiond/<Name>.
	Name   string `json:"name"`
	Branch string `json:"branch"`
	// Path is the worktree's directory (the session's project dir).
	Path string `json:"path"`
	// Repo is the work tree of the repository it belongs to; Base the
	// commit it started from.
	Repo string `json:"repo"`
	Base string `json:"base"`
	// From is the ref it started from (a branch, or --from).
	From string `json:"from,omitempty"`
	// RepoUncommitted is how many uncommitted files the repository had
	// when the worktree was made from its HEAD: they are not in it.
	RepoUncommitted int `json:"repo_uncommitted,omitempty"`
	// Port is the port allocated to it ($PORT, SESSIOND_PORT); 0 when no
	// port_range is set.
	Port int `json:"port,omitempty"`
}

// AgentHookRequest is one payload of an agent's hooks (or notify program),
// as sessionctl hook got it, for the daemon to read.
type AgentHookRequest struct {
	// Agent is the adapter the hook was installed for: claude-code, codex.
	Agent string `json:"agent"`
	// Payload is the hook's input as the agent gave it, unread.
	Payload string `json:"payload"`
}

// AgentHookResponse is what the hook tells the agent back.
type AgentHookResponse struct {
	// Event is the hook's event as the daemon read it; State the agent's
	// state after it.
	Event string `json:"event,omitempty"`
	State string `json:"state,omitempty"`
	// Context, when set, is told in the agent's conversation (Claude
	// Code's hookSpecificOutput.additionalContext): a warning.
	Context string `json:"context,omitempty"`
}

// Briefing is what a session started from, for its agent: the previous
// session's handoff and the next task of the feature list, with the
// project's next actions, blockers and progress.
type Briefing struct {
	// Previous is the handoff of the session before this one; nil for a
	// first session.
	Previous *Handoff `json:"previous,omitempty"`
	// Summary is the last session's summary, from the session state.
	Summary string `json:"summary,omitempty"`
	// NextTask is the most urgent item of the feature list not done yet.
	NextTask    *Task     `json:"next_task,omitempty"`
	NextActions []string  `json:"next_actions"`
	Blockers    []Blocker `json:"blockers"`
	ProgressPct float64   `json:"progress_pct"`
	TasksDone   int       `json:"tasks_done,omitempty"`
	TasksTotal  int       `json:"tasks_total,omitempty"`
}

// Task is an item of a project's feature list.
type Task struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Priority    string `json:"priority,omitempty"`
}
