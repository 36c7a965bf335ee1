package state

import "github.com/sessiond/sessiond/ipc/format"

// WorktreeHandoff is what a handoff says of the session's worktree
// (format.WorktreeHandoff).
type WorktreeHandoff = format.WorktreeHandoff
