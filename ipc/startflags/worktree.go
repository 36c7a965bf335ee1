package startflags

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

// worktreeByID is --worktree given without a name: the worktree is named
// after the session. It is no valid name, so it cannot be meant as one.
const worktreeByID = "@id"

// bindWorktree adds --worktree[=NAME] and --from REF.
func (f *Flags) bindWorktree(fs *pflag.FlagSet) {
	fs.StringVar(&f.worktree, "worktree", "", "run in a git worktree of DIR's repository on branch sessiond/NAME, made if new (--worktree alone: NAME is the session id)")
	fs.Lookup("worktree").NoOptDefVal = worktreeByID
	fs.StringVar(&f.req.From, "from", "", "with --worktree: the ref a new worktree starts from (default HEAD)")
}

// worktreeRequest puts the worktree flags into req.
func (f *Flags) worktreeRequest(req *ipc.StartRequest) error {
	given := f.fs != nil && f.fs.Changed("worktree")
	if !given {
		if req.From != "" {
			return errors.New("--from REF says where a new worktree starts: give --worktree too")
		}
		return nil
	}
	req.Worktree = true
	if f.worktree != worktreeByID {
		if err := config.CheckWorktreeName(f.worktree); err != nil {
			return fmt.Errorf("--worktree: %v", err)
		}
		req.WorktreeName = f.worktree
	}
	if strings.HasPrefix(req.From, "-") || strings.ContainsAny(req.From, "\x00\n") {
		return fmt.Errorf("--from %q: not a ref", req.From)
	}
	return nil
}

// TakeWorktreeName reads --worktree NAME written with a space, which pflag
// took as --worktree alone and a first directory NAME: when NAME is no
// directory, it is the worktree's name. It returns the directories left
// (".", when it was the only one).
func (f *Flags) TakeWorktreeName(dirs []string) []string {
	if f.fs == nil || !f.fs.Changed("worktree") || f.worktree != worktreeByID || len(dirs) == 0 {
		return dirs
	}
	if fi, err := os.Stat(dirs[0]); err == nil && fi.IsDir() {
		return dirs
	}
	if config.CheckWorktreeName(dirs[0]) != nil {
		return dirs
	}
	f.worktree = dirs[0]
	if len(dirs) == 1 {
		return []string{"."}
	}
	return dirs[1:]
}

// WorktreeNameGiven reports whether --worktree was given without a value
// (pflag then takes a NAME after a space for a positional argument).
func (f *Flags) WorktreeNameGiven() bool {
	return f.fs != nil && f.fs.Changed("worktree") && f.worktree != worktreeByID
}
