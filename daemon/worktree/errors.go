package worktree

import "errors"

// Sentinel errors that callers branch on; the errors returned wrap them
// with what and where.
var (
	// ErrNotRepo: the directory is in no git work tree.
	ErrNotRepo = errors.New("not in a git repository")
	// ErrBare: the repository has no work tree to branch from.
	ErrBare = errors.New("bare repository")
	// ErrDetached: HEAD is detached and no ref was given to start from.
	ErrDetached = errors.New("HEAD is detached")
	// ErrNoCommits: the repository has no commit to start from.
	ErrNoCommits = errors.New("the repository has no commits")
	// ErrBadRef: the ref to start from is not a commit.
	ErrBadRef = errors.New("not a commit")
	// ErrBranchExists: the branch sessiond/NAME exists but is no worktree
	// of this index.
	ErrBranchExists = errors.New("branch already exists")
	// ErrPathExists: the worktree's directory exists but is no worktree of
	// this index.
	ErrPathExists = errors.New("directory already exists")
	// ErrInsideRepo: the worktree directory would be inside the repository.
	ErrInsideRepo = errors.New("worktree directory inside the repository")
	// ErrBusy: another start is making the same worktree.
	ErrBusy = errors.New("worktree is being made")
	// ErrNoPort: every port of the range is held or bound.
	ErrNoPort = errors.New("port range exhausted")
	// ErrUnknown: no worktree of that name.
	ErrUnknown = errors.New("no such worktree")
	// ErrMissing: the worktree's directory was deleted.
	ErrMissing = errors.New("worktree directory is missing")
	// ErrSetup: a worktree_setup command failed.
	ErrSetup = errors.New("worktree setup failed")
)

// UncommittedError is Remove's refusal of a worktree with uncommitted
// work; errors.Is matches it with ErrUncommitted.
type UncommittedError struct {
	Name  string
	Files []string
}

// ErrUncommitted is matched by errors.Is for every *UncommittedError.
var ErrUncommitted = errors.New("uncommitted changes")

func (e *UncommittedError) Error() string {
	return "worktree " + e.Name + " has uncommitted changes"
}

// Is reports whether target is ErrUncommitted.
func (e *UncommittedError) Is(target error) bool { return target == ErrUncommitted }
