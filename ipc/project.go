package ipc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// ProjectRef names a project in a request: its id (the path's hash, which
// the route carries) and its directory, so that a daemon that has run no
// session there yet can still find it. The daemon checks that they agree.
type ProjectRef struct {
	ID  string
	Dir string
}

// CheckpointResult describes a checkpoint that was taken (or skipped, when
// nothing changed since the previous one).
type CheckpointResult struct {
	// ID is the checkpoint's commit; when Skipped, the previous checkpoint.
	ID string `json:"id"`
	// Ref is the ref the checkpoint is on (the branch in mode commit).
	Ref string `json:"ref"`
	// Tree is the tree of the work tree as checkpointed.
	Tree string `json:"tree"`
	// Time is when the checkpoint was made (second precision, as in git).
	Time time.Time `json:"time"`
	// FilesChanged is the number of paths that differ from the parent.
	FilesChanged int `json:"files_changed"`
	// Files are those paths, relative to the top of the work tree.
	Files []string `json:"files,omitempty"`
	// Skipped is set when the tree equals the previous checkpoint's.
	Skipped bool `json:"skipped"`
	// LeftOut names untracked content that was left out (dependency
	// directories, files over checkpoint_max_file).
	LeftOut []string `json:"left_out,omitempty"`
	// Summary is the checkpoint's subject (turn and files changed).
	Summary string `json:"summary,omitempty"`
	// Incremental is a checkpoint made from the watcher's record of what
	// changed; FullReason says why one was a full scan instead.
	Incremental bool   `json:"incremental"`
	FullReason  string `json:"full_reason,omitempty"`
}

// Checkpoint is one checkpoint of a project, as listed.
type Checkpoint struct {
	ID           string    `json:"id"`
	SessionID    string    `json:"session_id"`
	Time         time.Time `json:"time"`
	FilesChanged int       `json:"files_changed"`
	Message      string    `json:"message"`
	Ref          string    `json:"ref"`
	// Summary is the checkpoint's subject: the agent's turn, if any, and
	// the files changed ("Turn \"Add retries\": 2 files changed: a.go, b.go").
	Summary string `json:"summary,omitempty"`
	// Turn is the agent turn the checkpoint ends, shortened.
	Turn string `json:"turn,omitempty"`
	// Files are the first few files changed.
	Files []string `json:"files,omitempty"`
	// FormerIDs are ids the checkpoint had before a prune rewrote it: a
	// handoff or progress entry citing one still finds it.
	FormerIDs []string `json:"former_ids,omitempty"`
	// Folded is how many older checkpoints were folded into this one.
	Folded int `json:"folded,omitempty"`
	// Match and MatchedID say how a looked-up id found this checkpoint
	// (current, former or folded) and which full id it matched.
	Match     string `json:"match,omitempty"`
	MatchedID string `json:"matched_id,omitempty"`
}

// CheckpointStats is what a project's checkpoints hold on disk.
type CheckpointStats struct {
	Checkpoints int `json:"checkpoints"`
	Sessions    int `json:"sessions"`
	// Objects are the git objects only checkpoints reach, DiskBytes their
	// size on disk (compressed), SizeBytes uncompressed.
	Objects   int   `json:"objects"`
	DiskBytes int64 `json:"disk_bytes"`
	SizeBytes int64 `json:"size_bytes"`
	// LeftOut are the largest things checkpoints leave out now (too large,
	// or dependency directories).
	LeftOut []LeftOut `json:"left_out"`
}

// LeftOut is one path checkpoints leave out, with its size.
type LeftOut struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	Files int    `json:"files"`
	// Partial: the size was not measured in full (too many files).
	Partial bool `json:"partial,omitempty"`
}

// CheckpointsOptions says what GET /v1/projects/{id}/checkpoints does
// besides listing.
type CheckpointsOptions struct {
	// Prune, when positive, first keeps only that many checkpoints per
	// session (older ones are folded into history).
	Prune int
	// Find, when set, looks an id up instead of listing: the one
	// checkpoint it names now (its own id or prefix, an id it had before a
	// prune, or one folded into it), with Match saying which.
	Find string
}

// Handoff is a session's handoff.json: how it ended and what the next
// session should know (DESIGN §5.5).
type Handoff struct {
	SessionID            string    `json:"session_id"`
	ProjectDir           string    `json:"project_dir"`
	Command              []string  `json:"command"`
	StartedAt            time.Time `json:"started_at"`
	EndedAt              time.Time `json:"ended_at"`
	EndReason            string    `json:"end_reason"`
	ExitCode             *int      `json:"exit_code"`
	Signal               string    `json:"signal"`
	TaskAttempted        string    `json:"task_attempted"`
	TaskStatus           string    `json:"task_status"`
	CurrentStep          int       `json:"current_step"`
	TotalSteps           int       `json:"total_steps"`
	LastActionTaken      string    `json:"last_action_taken"`
	BlockedReason        string    `json:"blocked_reason"`
	BlockedNeedsHuman    bool      `json:"blocked_needs_human"`
	RecommendedNextSteps []string  `json:"recommended_next_steps"`
	Warnings             []string  `json:"warnings"`
	GitCommitHash        string    `json:"git_commit_hash"`
	GitBranch            string    `json:"git_branch"`
	UncommittedFiles     []string  `json:"uncommitted_files"`
	Checkpoint           string    `json:"checkpoint"`
	FilesChanged         []string  `json:"files_changed"`
	LastFileEdited       string    `json:"last_file_edited"`
	DevServerWasRunning  bool      `json:"dev_server_was_running"`
	Restarts             int       `json:"restarts"`
	LogTail              []string  `json:"log_tail"`
	// Agent is the session's coding agent, when sessiond knew it: its
	// conversation, to resume, and what it used.
	Agent *HandoffAgent `json:"agent,omitempty"`
	// Worktree is the session's worktree, if it ran in one.
	Worktree *WorktreeHandoff `json:"worktree,omitempty"`
}

// HandoffAgent is what a handoff says of the session's agent.
type HandoffAgent struct {
	Name           string  `json:"name"`
	ConversationID string  `json:"conversation_id,omitempty"`
	TranscriptPath string  `json:"transcript_path,omitempty"`
	ResumedFrom    string  `json:"resumed_from,omitempty"`
	State          string  `json:"state,omitempty"`
	WaitingReason  string  `json:"waiting_reason,omitempty"`
	Turns          int     `json:"turns,omitempty"`
	Tokens         *Tokens `json:"tokens,omitempty"`
}

// Conversation is a project's last agent conversation.
type Conversation struct {
	Agent          string    `json:"agent"`
	ID             string    `json:"id"`
	TranscriptPath string    `json:"transcript_path,omitempty"`
	SessionID      string    `json:"session_id"`
	EndedAt        time.Time `json:"ended_at"`
}

// ProjectSession is a project's session state (the seed's schema) and the
// restore summary rendered from it.
type ProjectSession struct {
	State   SessionState `json:"state"`
	Summary string       `json:"summary"`
	// Notices are problems found while reading it (a corrupt file kept
	// aside, a feature list that changed since the state was written).
	Notices []string `json:"notices,omitempty"`
}

// SessionState is a project's session_state.json.
type SessionState struct {
	LastSession    *LastSession  `json:"last_session,omitempty"`
	NextActions    []string      `json:"next_actions"`
	CurrentPlan    string        `json:"current_plan,omitempty"`
	ActiveBlockers []Blocker     `json:"active_blockers"`
	ProgressPct    float64       `json:"progress_pct"`
	TasksDone      int           `json:"tasks_done,omitempty"`
	TasksTotal     int           `json:"tasks_total,omitempty"`
	NextFrom       string        `json:"next_from,omitempty"`
	PassingTasks   []TaskID      `json:"passing_tasks,omitempty"`
	BlockerSeq     int           `json:"blocker_seq,omitempty"`
	SessionsSince  int           `json:"sessions_since,omitempty"`
	RecentRuns     []Run         `json:"recent_runs,omitempty"`
	LastRestore    *Restore      `json:"last_restore,omitempty"`
	Conversation   *Conversation `json:"conversation,omitempty"`
}

// Run is how a session that did nothing worth a summary ended.
type Run struct {
	SessionID string    `json:"session_id"`
	EndReason string    `json:"end_reason"`
	EndedAt   time.Time `json:"ended_at"`
}

// Restore records a restore of the work tree to a checkpoint.
type Restore struct {
	Checkpoint string    `json:"checkpoint"`
	At         time.Time `json:"at"`
}

// LastSession describes the session that last ended in a project.
type LastSession struct {
	Summary        string    `json:"summary"`
	CompletedTasks []TaskID  `json:"completed_tasks"`
	Timestamp      time.Time `json:"timestamp,omitzero"`
	SessionID      string    `json:"session_id,omitempty"`
	EndReason      string    `json:"end_reason,omitempty"`
}

// Blocker is a question that needs a human before work can go on.
type Blocker struct {
	ID       int    `json:"id"`
	Question string `json:"question"`
	Priority string `json:"priority"`
}

// TaskID is a task or feature id as a feature list gives it: a JSON number
// (27) or string ("auth-3"), kept as it came.
type TaskID struct {
	Text   string
	Number bool
}

// String returns the id as text.
func (t TaskID) String() string { return t.Text }

// MarshalJSON writes a numeric id as a number, an empty one as null and
// any other as a string.
func (t TaskID) MarshalJSON() ([]byte, error) {
	switch {
	case t.Text == "" && !t.Number:
		return []byte("null"), nil
	case t.Number:
		return []byte(t.Text), nil
	}
	return json.Marshal(t.Text)
}

// UnmarshalJSON accepts a number, a string or null.
func (t *TaskID) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*t = TaskID{}
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*t = TaskID{Text: s}
	default:
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return fmt.Errorf("task id must be a number or a string, got %.40s", data)
		}
		*t = TaskID{Text: string(n), Number: true}
	}
	return nil
}
