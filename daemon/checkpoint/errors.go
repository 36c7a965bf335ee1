package checkpoint

import (
	"errors"
	"strings"
)

// Sentinel errors that callers can branch on with errors.Is. Errors returned by
// this package wrap them together with what failed and where.
var (
	// ErrNoGit means the git binary is not in PATH.
	ErrNoGit = errors.New("git not found in PATH")
	// ErrNotWorkTree means the directory is inside a .git directory, in a bare
	// repository, or has a .git entry that git does not recognise.
	ErrNotWorkTree = errors.New("not a git work tree")
	// ErrCorruptIndex means git could not read the repository's index.
	ErrCorruptIndex = errors.New("git index is corrupt")
	// ErrIndexLocked means another git process holds the index lock (or a
	// stale index.lock was left behind by a killed one).
	ErrIndexLocked = errors.New("git index is locked")
	// ErrReadOnly means git could not write to the repository (its objects,
	// refs or temporary files).
	ErrReadOnly = errors.New("repository is not writable")
	// ErrDiskFull means a write failed because the disk is full.
	ErrDiskFull = errors.New("no space left on device")
	// ErrInProgress means a merge, rebase, cherry-pick, revert or bisect is in
	// progress; only mode commit refuses to run then.
	ErrInProgress = errors.New("a merge, rebase, cherry-pick, revert or bisect is in progress")
	// ErrDetached means HEAD is detached; only mode commit refuses to run then.
	ErrDetached = errors.New("HEAD is detached")
	// ErrConflict means a checkpoint ref moved while it was being updated (the
	// compare-and-swap of update-ref failed).
	ErrConflict = errors.New("checkpoint ref changed concurrently")
	// ErrUnknownCheckpoint means no checkpoint of the project has the given id
	// or id prefix.
	ErrUnknownCheckpoint = errors.New("unknown checkpoint")
	// ErrFolded means the id is of a checkpoint that retention folded into a
	// later one, and git no longer has its commit: its own state is gone.
	ErrFolded = errors.New("checkpoint was folded away")
	// ErrAmbiguousCheckpoint means several checkpoints share the given prefix.
	ErrAmbiguousCheckpoint = errors.New("ambiguous checkpoint id prefix")
	// ErrBadSessionID means the session id cannot be used in a ref name.
	ErrBadSessionID = errors.New("invalid session id")
	// ErrBadMode means the mode is neither "ref" nor "commit".
	ErrBadMode = errors.New("invalid checkpoint mode")
	// ErrNoStateDir means a non-git project needs a shadow repository but
	// Options.StateDir is empty.
	ErrNoStateDir = errors.New("no state dir for the shadow repository of a non-git project")
)

// classify maps git's stderr (run with LC_ALL=C) to a sentinel error, or nil.
func classify(stderr string) error {
	s := strings.ToLower(stderr)
	switch {
	case strings.Contains(s, "no space left on device"),
		strings.Contains(s, "disk quota exceeded"):
		return ErrDiskFull
	case strings.Contains(s, "index.lock") && strings.Contains(s, "file exists"):
		return ErrIndexLocked
	case strings.Contains(s, "index file corrupt"),
		strings.Contains(s, "index file smaller than expected"),
		strings.Contains(s, "bad index file"),
		strings.Contains(s, "bad signature") && strings.Contains(s, "index"),
		strings.Contains(s, "bad index version"),
		strings.Contains(s, "unknown index entry format"):
		return ErrCorruptIndex
	case strings.Contains(s, "read-only file system"),
		strings.Contains(s, "permission denied"),
		strings.Contains(s, "insufficient permission"),
		strings.Contains(s, "unable to create temporary file"),
		strings.Contains(s, "unable to write"),
		strings.Contains(s, "failed to write object"),
		strings.Contains(s, "unable to add") && strings.Contains(s, "to database"):
		return ErrReadOnly
	case strings.Contains(s, "cannot lock ref"),
		strings.Contains(s, "but expected"):
		return ErrConflict
	}
	return nil
}

// ErrUnsaved means a restore was refused, nothing changed, because it
// would write over or remove files that no checkpoint holds; an
// *UnsavedError names them.
var ErrUnsaved = errors.New("the restore would lose files no checkpoint holds")

// UnsavedError names the files a refused restore would have lost: ignored
// ones, untracked ones left out of checkpoints (checkpoint_max_file), or
// such files in a directory the checkpoint has as a file.
type UnsavedError struct {
	Paths []string // at most maxUnsaved, then "..."
}

func (e *UnsavedError) Error() string {
	return "nothing restored: it would write over or remove files no checkpoint holds (ignored, or left out as too large): " +
		strings.Join(e.Paths, ", ") + "; move them out of the way, then restore again"
}

func (e *UnsavedError) Unwrap() error { return ErrUnsaved }
