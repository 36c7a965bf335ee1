package format

import "time"

// Checkpoint is one checkpoint of a project, as listed.
type Checkpoint struct {
	// ID is the checkpoint's commit.
	ID string `json:"id"`
	// SessionID is the session that made it.
	SessionID string `json:"session_id"`
	// Time is when it was made.
	Time time.Time `json:"time"`
	// FilesChanged is the number of paths that differ from its parent.
	FilesChanged int `json:"files_changed"`
	// Message is the caller's message, or the generated subject.
	Message string `json:"message"`
	// Ref is the ref it is on.
	Ref string `json:"ref"`
	// Summary is the generated subject: the agent's turn, if one was named,
	// and the files changed (the first few and a count), so that a list of
	// checkpoints reads like the history of the session
	// ("Turn \"Add retries\": 2 files changed: a.go, b.go").
	Summary string `json:"summary,omitempty"`
	// Turn is the label of the agent's turn it ends, if any, shortened.
	Turn string `json:"turn,omitempty"`
	// Files are the first few files it changed (FilesChanged counts them
	// all).
	Files []string `json:"files,omitempty"`
	// FormerIDs are the ids this checkpoint had before prunes rewrote it,
	// oldest first: every id ever handed out for it (a handoff or progress
	// entry citing one) still finds it.
	FormerIDs []string `json:"former_ids,omitempty"`
	// Folded counts the older checkpoints folded into this one by
	// retention; their changes are this checkpoint's now.
	Folded int `json:"folded,omitempty"`
	// Match and MatchedID say how a looked-up id found this checkpoint
	// (current, former or folded) and which full id it matched.
	Match     string `json:"match,omitempty"`
	MatchedID string `json:"matched_id,omitempty"`
}

// CheckpointResult describes a checkpoint that was taken (or skipped, when
// nothing changed since the previous one).
type CheckpointResult struct {
	// ID is the checkpoint's commit; when Skipped, the previous checkpoint.
	ID string `json:"id"`
	// Ref is the ref the checkpoint is on (the branch in mode commit).
	Ref string `json:"ref"`
	// Tree is the tree of the work tree as checkpointed: the base of the
	// next incremental checkpoint.
	Tree string `json:"tree"`
	// Time is when the checkpoint was made (second precision, as in git);
	// none when Skipped: no checkpoint was made.
	Time time.Time `json:"time,omitzero"`
	// FilesChanged is the number of paths that differ from the parent.
	FilesChanged int `json:"files_changed"`
	// Files are those paths, relative to the top of the work tree.
	Files []string `json:"files,omitempty"`
	// Summary is the checkpoint's subject: the turn and the files changed.
	Summary string `json:"summary,omitempty"`
	// Skipped is set when the tree equals the previous checkpoint's: no
	// commit was made.
	Skipped bool `json:"skipped"`
	// LeftOut names untracked content that was left out: directories (with
	// a trailing slash) such as node_modules, and files over
	// checkpoint_max_file.
	LeftOut []string `json:"left_out,omitempty"`
	// Incremental is set when only the changed paths were read; otherwise
	// the whole work tree was scanned, and FullReason says why.
	Incremental bool   `json:"incremental"`
	FullReason  string `json:"full_reason,omitempty"`
}
