package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/ipc/startflags"
)

// worktreesCmd is `sessionctl worktrees [REPO]`.
func (a *app) worktreesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "worktrees [REPO]",
		Short: "List the worktrees of parallel sessions (sessionctl start --worktree), with their sessions and state",
		Long: `List the git worktrees sessiond made for sessions (start --worktree[=NAME]),
of the repository REPO if given: name, branch, state (active: a session runs
in it; idle: kept for review; missing: its directory was deleted), port,
commits on its branch since its base, uncommitted files, its sessions, and
the command that reviews its work (git diff BASE...sessiond/NAME).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			repo := ""
			if len(args) == 1 {
				dir, err := absDir(args[0])
				if err != nil {
					return err
				}
				repo = dir
			}
			list, err := a.client.Worktrees(cmd.Context(), repo)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(list)
			}
			a.printWorktrees(list)
			return nil
		},
	}
}

func (a *app) printWorktrees(list []ipc.WorktreeInfo) {
	if len(list) == 0 {
		fmt.Fprintln(a.out, "no worktrees")
		return
	}
	t := newTable(a.useColor())
	t.header("NAME", "BRANCH", "STATE", "PORT", "AHEAD", "UNCOMMITTED", "SESSIONS", "PATH")
	for _, w := range list {
		port := "-"
		if w.Port > 0 {
			port = fmt.Sprint(w.Port)
		}
		var sessions []string
		for _, s := range w.Sessions {
			st := s.State
			if s.EndReason != "" && !ipc.Live(s.State) {
				st += " (" + ipc.EndLabel(s.EndReason) + ")"
			}
			sessions = append(sessions, s.ID+" "+st)
		}
		ss := "-"
		if len(sessions) > 0 {
			ss = sessions[0]
			if len(sessions) > 1 {
				ss += fmt.Sprintf(" +%d", len(sessions)-1)
			}
		}
		color := ""
		switch w.State {
		case ipc.WorktreeActive:
			color = "32"
		case ipc.WorktreeMissing:
			color = "31"
		}
		t.row(cell{text: ipc.TerminalLine(w.Name)}, cell{text: ipc.TerminalLine(w.Branch)}, cell{text: w.State, color: color},
			cell{text: port}, cell{text: fmt.Sprint(w.CommitsAhead)}, cell{text: fmt.Sprint(len(w.UncommittedFiles))},
			cell{text: ss}, cell{text: ipc.TerminalLine(w.Path)})
	}
	t.write(a.out)
	fmt.Fprintln(a.out)
	for _, w := range list {
		fmt.Fprintf(a.out, "review %s: %s\n", ipc.TerminalLine(w.Name), ipc.TerminalLine(w.Review))
		if w.Error != "" {
			fmt.Fprintf(a.out, "  (%s)\n", ipc.TerminalLine(w.Error))
		}
	}
}

// worktreeCmd is `sessionctl worktree rm NAME`.
func (a *app) worktreeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worktree",
		Short: "Manage the worktrees of parallel sessions (rm)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var force bool
	var repo string
	rm := &cobra.Command{
		Use:   "rm [--force] [--repo REPO] NAME",
		Short: "Remove a worktree (refused with uncommitted work unless --force, which checkpoints it first)",
		Long: `Remove the worktree NAME: its directory and git's record of it, and its
branch sessiond/NAME when the branch has no commit of its own (a branch with
commits is kept: merge or delete it yourself). A worktree with a live session
is refused; one with uncommitted files too, unless --force, which first takes
a checkpoint of them (sessionctl checkpoints REPO lists it). A worktree whose
directory was deleted by hand is pruned from git's list, as git worktree
prune does.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := ipc.WorktreeRemoveRequest{Force: force}
			if repo != "" {
				dir, err := absDir(repo)
				if err != nil {
					return err
				}
				req.Repo = dir
			}
			res, err := a.client.RemoveWorktree(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(res)
			}
			a.printRemoved(res)
			return nil
		},
	}
	rm.Flags().BoolVarP(&force, "force", "f", false, "remove uncommitted work too, after a checkpoint of it")
	rm.Flags().StringVar(&repo, "repo", "", "the repository whose worktree NAME is (when the name is in several)")
	cmd.AddCommand(rm)
	return cmd
}

func (a *app) printRemoved(r *ipc.WorktreeRemoved) {
	w := r.Worktree
	what := "removed"
	if r.Pruned {
		what = "pruned (its directory was gone)"
	}
	fmt.Fprintf(a.out, "worktree %s %s: %s\n", ipc.TerminalLine(w.Name), what, ipc.TerminalLine(w.Path))
	if r.Checkpoint != "" {
		fmt.Fprintf(a.out, "  %d uncommitted files kept in checkpoint %s (%s)\n", len(r.Discarded), shortID(r.Checkpoint), r.Ref)
	}
	if r.BranchDeleted {
		fmt.Fprintf(a.out, "  branch %s deleted (no commits of its own)\n", w.Branch)
	} else if r.CommitsAhead > 0 {
		fmt.Fprintf(a.out, "  branch %s kept: %s since its base (git branch -D %s deletes it)\n", w.Branch, plural(r.CommitsAhead, "commit"), w.Branch)
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// worktreeLine describes a session's worktree in one line, for start and
// inspect.
func worktreeLine(w *ipc.Worktree) string {
	var b strings.Builder
	fmt.Fprintf(&b, "worktree %s: %s on %s (from %s)", w.Name, w.Path, w.Branch, shortID(w.Base))
	if w.Port > 0 {
		fmt.Fprintf(&b, ", PORT=%d", w.Port)
	}
	return ipc.TerminalLine(b.String())
}

// worktreeHint adds to a start's usage error with two arguments what
// --worktree NAME (with a space) did: pflag took NAME as the directory.
func worktreeHint(cmd *cobra.Command, flags *startflags.Flags, err error) error {
	pos := cmd.Flags().Args()
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		pos = pos[:dash]
	}
	if len(pos) == 2 && cmd.Flags().Changed("worktree") && !flags.WorktreeNameGiven() {
		return usageErr("%v; to name the worktree, write --worktree=%s", err, pos[0])
	}
	return err
}
