package format

import "time"

// Task statuses of a handoff.
const (
	TaskCompleted  = "completed"
	TaskInProgress = "in_progress"
	TaskBlocked    = "blocked"
	TaskFailed     = "failed"
)

// Handoff is handoff.json: how a session ended and what the next one should
// know (DESIGN §5.5). Every field is always written, so that readers need
// not guess between "absent" and "empty"; ExitCode is null when the exit
// status is unknown (an adopted or crashed session).
type Handoff struct {
	SessionID       string    `json:"session_id"`
	ProjectDir      string    `json:"project_dir"`
	Command         []string  `json:"command"`
	StartedAt       time.Time `json:"started_at"`
	EndedAt         time.Time `json:"ended_at"`
	EndReason       string    `json:"end_reason"`
	ExitCode        *int      `json:"exit_code"`
	Signal          string    `json:"signal"`
	TaskAttempted   string    `json:"task_attempted"`
	TaskStatus      string    `json:"task_status"`
	CurrentStep     int       `json:"current_step"`
	TotalSteps      int       `json:"total_steps"`
	LastActionTaken string    `json:"last_action_taken"`
	// Summary and Plan are the agent's own words (sessionctl report
	// --summary, --plan); ProgressPct the progress, from the feature list
	// or the agent's report, when either says it.
	Summary              string   `json:"summary,omitempty"`
	Plan                 string   `json:"plan,omitempty"`
	ProgressPct          *float64 `json:"progress_pct,omitempty"`
	BlockedReason        string   `json:"blocked_reason"`
	BlockedNeedsHuman    bool     `json:"blocked_needs_human"`
	RecommendedNextSteps []string `json:"recommended_next_steps"`
	Warnings             []string `json:"warnings"`
	GitCommitHash        string   `json:"git_commit_hash"`
	GitBranch            string   `json:"git_branch"`
	UncommittedFiles     []string `json:"uncommitted_files"`
	Checkpoint           string   `json:"checkpoint"`
	FilesChanged         []string `json:"files_changed"`
	LastFileEdited       string   `json:"last_file_edited"`
	DevServerWasRunning  bool     `json:"dev_server_was_running"`
	Restarts             int      `json:"restarts"`
	LogTail              []string `json:"log_tail"`
	// Agent is the session's coding agent, when sessiond knew it: its
	// conversation, to resume, and what it used.
	Agent *AgentFacts `json:"agent,omitempty"`
	// Worktree is the session's worktree, if it ran in one.
	Worktree *WorktreeHandoff `json:"worktree,omitempty"`
}

// AgentFacts is what a handoff says of the session's agent: which one, its
// conversation (to resume it), what it was doing at the end and its use of
// the model.
type AgentFacts struct {
	Name           string `json:"name"`
	ConversationID string `json:"conversation_id,omitempty"`
	TranscriptPath string `json:"transcript_path,omitempty"`
	// ResumedFrom is the conversation the session continued, if any.
	ResumedFrom string `json:"resumed_from,omitempty"`
	// State and WaitingReason are the agent's at the end: a session
	// stopped while its agent waited says for what.
	State         string  `json:"state,omitempty"`
	WaitingReason string  `json:"waiting_reason,omitempty"`
	Turns         int     `json:"turns,omitempty"`
	Tokens        *Tokens `json:"tokens,omitempty"`
}

// Tokens is an agent's use of its model: tokens read from its transcript,
// and the cost where the agent reports it.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
	// CostUSD is the agent's own figure; CostKnown says whether it gave one.
	CostUSD   float64 `json:"cost_usd,omitempty"`
	CostKnown bool    `json:"cost_known,omitempty"`
	// EstimatedUSD is the tokens' cost at their models' list prices, for
	// agents that report none (Codex) or only at their end (interactive
	// Claude Code).
	EstimatedUSD float64 `json:"estimated_usd,omitempty"`
}

// Spent is what a cost cap holds the session to: the agent's own figure,
// or the estimate where that is more (the agent's lags it, or is none).
func (t *Tokens) Spent() float64 {
	if t == nil {
		return 0
	}
	return max(t.CostUSD, t.EstimatedUSD)
}

// Total is every token counted: input, output and cache reads and writes.
func (t *Tokens) Total() int64 {
	if t == nil {
		return 0
	}
	return t.Input + t.Output + t.CacheRead + t.CacheWrite
}

// WorktreeHandoff is what a handoff says of the git worktree its session
// ran in: where it is, its branch, its work since the base, and the
// command that reviews it.
type WorktreeHandoff struct {
	Name   string `json:"name"`
	Branch string `json:"branch"`
	Path   string `json:"path"`
	Repo   string `json:"repo"`
	Base   string `json:"base"`
	Port   int    `json:"port,omitempty"`
	// CommitsAhead counts the branch's commits since Base; Uncommitted the
	// worktree's uncommitted files (listed in uncommitted_files).
	CommitsAhead int    `json:"commits_ahead"`
	Uncommitted  int    `json:"uncommitted"`
	Review       string `json:"review"`
}
