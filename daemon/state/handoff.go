package state

import (
	"errors"
	"fmt"
	"time"
)

// Task statuses of a handoff.
const (
	TaskCompleted  = "completed"
	TaskInProgress = "in_progress"
	TaskBlocked    = "blocked"
	TaskFailed     = "failed"
)

// Limits that Handoff.Bound enforces on lists that grow with the session.
const (
	MaxHandoffFiles    = 1000
	MaxHandoffSteps    = 20
	MaxHandoffWarnings = 50
	MaxLogTailLines    = 200
	MaxLogLineLen      = 1000
	maxHandoffText     = 2000
)

// Handoff is handoff.json: how a session ended and what the next one should
// know. Every field is always written, so that readers need not guess
// between "absent" and "empty"; ExitCode is null when the exit status is
// unknown (an adopted or crashed session).
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
}

// Bound keeps a handoff readable: at most MaxHandoffSteps next steps,
// MaxHandoffWarnings warnings, MaxLogTailLines log lines (the last ones) of
// MaxLogLineLen characters, and MaxHandoffFiles file names per list, a
// warning saying how many were left out. Nil lists become empty ones.
func (h *Handoff) Bound() {
	h.TaskAttempted = truncate(h.TaskAttempted, maxHandoffText)
	h.LastActionTaken = truncate(h.LastActionTaken, maxHandoffText)
	h.BlockedReason = truncate(h.BlockedReason, maxHandoffText)
	h.RecommendedNextSteps = boundList(h.RecommendedNextSteps, MaxHandoffSteps, maxHandoffText)
	h.Warnings = boundList(h.Warnings, MaxHandoffWarnings, maxHandoffText)
	h.UncommittedFiles = h.boundFiles("uncommitted_files", h.UncommittedFiles)
	h.FilesChanged = h.boundFiles("files_changed", h.FilesChanged)
	if len(h.LogTail) > MaxLogTailLines {
		h.LogTail = h.LogTail[len(h.LogTail)-MaxLogTailLines:]
	}
	tail := make([]string, len(h.LogTail))
	for i, l := range h.LogTail {
		tail[i] = truncate(l, MaxLogLineLen)
	}
	h.LogTail = tail
	if h.Command == nil {
		h.Command = []string{}
	}
}

func (h *Handoff) boundFiles(name string, files []string) []string {
	if files == nil {
		return []string{}
	}
	if len(files) <= MaxHandoffFiles {
		return files
	}
	if len(h.Warnings) < MaxHandoffWarnings {
		h.Warnings = append(h.Warnings, fmt.Sprintf("%s: %d more not listed", name, len(files)-MaxHandoffFiles))
	}
	return files[:MaxHandoffFiles]
}

// SaveHandoff bounds h (see Bound) and writes it atomically, mode 0600, to
// path, creating missing parent directories with mode 0700; a path in a
// project's .sessiond (HandoffPath) gets it through ProjectDir.
func SaveHandoff(path string, h *Handoff) error {
	if h == nil {
		return errors.New("save handoff: nil handoff")
	}
	if err := ensureParent(path); err != nil {
		return fmt.Errorf("save handoff: %w", err)
	}
	h.Bound()
	if err := WriteJSON(path, h); err != nil {
		return fmt.Errorf("save handoff: %w", err)
	}
	return nil
}

// LoadHandoff reads a handoff. A missing file gives an error wrapping
// fs.ErrNotExist; a corrupt one is moved aside and gives a *CorruptError.
func LoadHandoff(path string) (*Handoff, error) {
	var h Handoff
	if err := ReadJSON(path, &h); err != nil {
		return nil, fmt.Errorf("load handoff: %w", err)
	}
	return &h, nil
}
