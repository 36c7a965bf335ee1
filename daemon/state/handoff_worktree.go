package state

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
