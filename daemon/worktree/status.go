package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/sessiond/sessiond/daemon/checkpoint"
)

// Status is a worktree as a hand-back tells it.
type Status struct {
	// Missing is set when the directory was deleted.
	Missing bool
	// Head is the commit the worktree is at.
	Head string
	// Ahead counts the branch's commits since the base.
	Ahead int
	// Uncommitted lists what git status shows in the worktree.
	Uncommitted []string
	// Review is the command that shows the branch's work
	// (ReviewCommand).
	Review string
}

// statusTimeout bounds the git commands of one Status.
const statusTimeout = 30 * time.Second

// StatusOf looks at worktree e with git, as cred.
func StatusOf(ctx context.Context, e Entry, cred *checkpoint.Credential) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	st := Status{Review: ReviewCommand(e.Repo, e.Base, e.Branch), Uncommitted: []string{}}
	var errs []error
	if _, err := os.Lstat(e.Path); errors.Is(err, fs.ErrNotExist) {
		st.Missing = true
	} else if facts, err := checkpoint.Facts(ctx, checkpoint.FactsRequest{Dir: e.Path, Credential: cred}); err != nil {
		errs = append(errs, err)
	} else if facts.IsRepo {
		st.Head = facts.Head
		if facts.Uncommitted != nil {
			st.Uncommitted = facts.Uncommitted
		}
	}
	if exists, err := branchExists(ctx, e.Repo, cred, e.Branch); err != nil {
		errs = append(errs, err)
	} else if exists {
		n, err := CommitsAhead(ctx, e.Repo, cred, e.Base, e.Branch)
		if err != nil {
			errs = append(errs, err)
		}
		st.Ahead = n
	}
	if len(errs) > 0 {
		return st, fmt.Errorf("status of worktree %s: %w", e.Name, errors.Join(errs...))
	}
	return st, nil
}
