package ipc

import "github.com/sessiond/sessiond/ipc/format"

// ProjectRef names a project in a request: its id (the path's hash, which
// the route carries) and its directory, so that a daemon that has run no
// session there yet can still find it. The daemon checks that they agree.
type ProjectRef struct {
	ID  string
	Dir string
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

// ProjectSession is a project's session state (the seed's schema) and the
// restore summary rendered from it.
type ProjectSession struct {
	State   SessionState `json:"state"`
	Summary string       `json:"summary"`
	// Notices are problems found while reading it (a corrupt file kept
	// aside, a feature list that changed since the state was written).
	Notices []string `json:"notices,omitempty"`
}

// The file formats the API serves, declared once in package format.
type (
	CheckpointResult = format.CheckpointResult
	Checkpoint       = format.Checkpoint
	Handoff          = format.Handoff
	HandoffAgent     = format.AgentFacts
	WorktreeHandoff  = format.WorktreeHandoff
	Tokens           = format.Tokens
	Conversation     = format.Conversation
	SessionState     = format.SessionState
	Run              = format.Run
	Restore          = format.Restore
	LastSession      = format.LastSession
	Blocker          = format.Blocker
	TaskID           = format.TaskID
)
