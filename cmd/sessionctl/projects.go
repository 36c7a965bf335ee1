package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/ipc"
)

func (a *app) checkpointCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoint [ID|DIR]",
		Short: "Take a checkpoint of a live session's project now",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.resolve(cmd.Context(), argOrHere(args))
			if err != nil {
				return err
			}
			r, err := a.client.Checkpoint(cmd.Context(), id)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(r)
			}
			if r.Skipped {
				fmt.Fprintf(a.out, "nothing changed since checkpoint %.12s\n", r.ID)
			} else {
				fmt.Fprintf(a.out, "checkpoint %.12s on %s: %s changed\n", r.ID, r.Ref, plural(r.FilesChanged, "file"))
			}
			for _, p := range r.LeftOut {
				fmt.Fprintf(a.out, "  left out: %s\n", p)
			}
			return nil
		},
	}
}

func (a *app) checkpointsCmd() *cobra.Command {
	var (
		prune int
		stats bool
	)
	cmd := &cobra.Command{
		Use:   "checkpoints [--prune N | --stats] DIR [ID]",
		Short: "List a project's checkpoints, find the one an id names, or show what they hold on disk",
		Long: "List a project's checkpoints, newest first. With ID, show the checkpoint that id names now: its own,\n" +
			"one it had before a prune rewrote it, or one folded into it by retention. --prune N keeps N per\n" +
			"session first; --stats shows the objects and bytes checkpoints hold and the largest content left out.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if prune < 0 {
				return usageErr("--prune: want a positive number of checkpoints to keep")
			}
			if stats && (prune > 0 || len(args) == 2) {
				return usageErr("--stats takes only DIR")
			}
			dir, err := absDir(args[0])
			if err != nil {
				return err
			}
			if stats {
				return a.checkpointStats(cmd, dir)
			}
			opt := ipc.CheckpointsOptions{Prune: prune}
			if len(args) == 2 {
				opt.Find = args[1]
			}
			list, err := a.client.Checkpoints(cmd.Context(), dir, opt)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(list)
			}
			tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTIME\tSESSION\tFILES\tMESSAGE")
			for _, c := range list {
				summary := c.Summary
				if summary == "" {
					summary = firstLine(c.Message)
				}
				if id, ok := strings.CutPrefix(firstLine(c.Message), "before restoring "); ok {
					// A restore's own: which restore it undoes says more
					// than what it changed.
					summary = fmt.Sprintf("before restoring %.12s", id)
				}
				fmt.Fprintf(tw, "%.12s\t%s\t%s\t%d\t%s\n", c.ID, c.Time.Local().Format("2006-01-02 15:04:05"), c.SessionID, c.FilesChanged, clipText(ipc.TerminalLine(summary), 72))
				if len(c.FormerIDs) > 0 {
					short := make([]string, len(c.FormerIDs))
					for i, id := range c.FormerIDs {
						short[i] = fmt.Sprintf("%.12s", id)
					}
					fmt.Fprintf(tw, "  was %s\t\t\t\t(the same checkpoint before a prune)\n", strings.Join(short, ", "))
				}
				if c.Folded > 0 {
					fmt.Fprintf(tw, "  holds %s\t\t\t\t(folded into it by retention)\n", plural(c.Folded, "older checkpoint"))
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if opt.Find != "" && len(list) == 1 && list[0].Match != "current" {
				fmt.Fprintf(a.out, "%s is %s id of checkpoint %.12s\n", opt.Find, map[string]string{"former": "a former", "folded": "a folded"}[list[0].Match], list[0].ID)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&prune, "prune", 0, "keep only the newest N checkpoints of each session (older ones fold into history)")
	cmd.Flags().BoolVar(&stats, "stats", false, "show what the checkpoints hold on disk")
	return cmd
}

func (a *app) checkpointStats(cmd *cobra.Command, dir string) error {
	st, err := a.client.CheckpointStats(cmd.Context(), dir)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(st)
	}
	fmt.Fprintf(a.out, "%s of %s\n", plural(st.Checkpoints, "checkpoint"), plural(st.Sessions, "session"))
	fmt.Fprintf(a.out, "%s only checkpoints reach: %s on disk, %s uncompressed\n", plural(st.Objects, "object"), humanBytes(st.DiskBytes), humanBytes(st.SizeBytes))
	if len(st.LeftOut) > 0 {
		fmt.Fprintln(a.out, "largest left out of checkpoints:")
		tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
		for _, l := range st.LeftOut {
			size := humanBytes(l.Bytes)
			if l.Partial {
				size = "≥ " + size
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", ipc.TerminalLine(l.Path), size, plural(l.Files, "file"))
		}
		return tw.Flush()
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func (a *app) restoreCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "restore [--force] DIR CHECKPOINT",
		Short: "Checkpoint the current tree, then restore the work tree to CHECKPOINT",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := absDir(args[0])
			if err != nil {
				return err
			}
			resp, err := a.client.Restore(cmd.Context(), dir, args[1], force)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(resp)
			}
			fmt.Fprintf(a.out, "saved the current tree as checkpoint %.12s\nrestored %s to checkpoint %.12s\n", resp.Saved.ID, dir, resp.Restored.ID)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "restore even while a session of the project runs")
	return cmd
}

func (a *app) handoffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "handoff [ID|DIR]",
		Short: "Print a session's handoff",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.resolve(cmd.Context(), argOrHere(args))
			var none *noSessionError
			if errors.As(err, &none) && remote == nil {
				// The sessions' records are gone (rm, prune): the
				// project's own handoff is the latest session's.
				return a.projectHandoff(none.dir, err)
			}
			if err != nil {
				return err
			}
			h, err := a.client.Handoff(cmd.Context(), id)
			if err != nil {
				return err
			}
			return a.printJSON(h)
		},
	}
}

// projectHandoff prints the handoff in dir's .sessiond, read with the
// caller's own rights, or returns orElse when there is none.
func (a *app) projectHandoff(dir string, orElse error) error {
	path := filepath.Join(dir, ".sessiond", "handoff.json")
	// As the daemon writes it: a plain file, no symlink, never blocking.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return orElse
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return &exitError{exitFailed, fmt.Errorf("%s is not a plain file", path)}
	}
	data, err := io.ReadAll(io.LimitReader(f, 4<<20))
	if err != nil {
		return err
	}
	var h ipc.Handoff
	if err := json.Unmarshal(data, &h); err != nil {
		return &exitError{exitFailed, fmt.Errorf("%s is not a handoff: %v", path, err)}
	}
	return a.printJSON(h)
}

func (a *app) stateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "state [DIR]",
		Short: "Print the project's session state as the restore summary (--json: the state)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := absDir(argOrHere(args))
			if err != nil {
				return err
			}
			ps, err := a.client.ProjectSession(cmd.Context(), dir)
			if errors.Is(err, ipc.ErrNotFound) {
				if strings.Contains(err.Error(), "no usable session state") {
					fmt.Fprintln(a.errOut, "sessionctl: warning:", err)
				}
				if a.json {
					fmt.Fprintln(a.out, "null")
					return nil
				}
				if live := a.liveIn(cmd.Context(), dir); live != nil {
					fmt.Fprintf(a.out, "No session has ended in %s yet: session %s has been running for %s (sessionctl inspect %s).\n",
						ipc.TerminalLine(dir), live.ID, shortDuration(time.Since(live.StartedAt)), live.ID)
				} else {
					fmt.Fprintf(a.out, "No session state in %s: no session has ended there yet, and the next one starts from scratch.\n", ipc.TerminalLine(dir))
				}
				return nil
			}
			if err != nil {
				return err
			}
			for _, n := range ps.Notices {
				fmt.Fprintln(a.errOut, "sessionctl: notice:", ipc.TerminalLine(n))
			}
			if a.json {
				return a.printJSON(ps.State)
			}
			_, err = fmt.Fprint(a.out, ipc.TerminalText(ps.Summary))
			if !strings.HasSuffix(ps.Summary, "\n") {
				fmt.Fprintln(a.out)
			}
			return err
		},
	}
}

func (a *app) clearSessionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "clear-session [DIR]",
		Short: "Delete the project's session state",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arg := "."
			if len(args) == 1 {
				arg = args[0]
			}
			dir, err := absDir(arg)
			if err != nil {
				return err
			}
			if err := a.client.ClearSessionState(cmd.Context(), dir); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(struct {
					Project string `json:"project"`
					Cleared bool   `json:"cleared"`
				}{dir, true})
			}
			fmt.Fprintln(a.out, "✓ Session state cleared")
			return nil
		},
	}
}

func (a *app) reportCmd() *cobra.Command {
	var r ipc.Report
	var progress float64
	var session string
	cmd := &cobra.Command{
		Use:   "report [--summary S] [--next A]... [--blocker Q]... [--resolve ID|all]... [--plan P] [--progress PCT] [--task T] [--step N/M] [--status S] [DIR]",
		Short: "Record what the agent knows, from inside a session (uses SESSIOND_SESSION_ID); --resolve also from outside, in DIR (default .)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := session
			if id == "" && (len(args) == 1 || os.Getenv("SESSIOND_SESSION_ID") == "") && cmd.Flags().Changed("resolve") {
				// A person answers the agent's question: from outside
				// any session, live one or not.
				for _, name := range []string{"summary", "next", "blocker", "plan", "progress", "task", "step", "status", "last-action"} {
					if cmd.Flags().Changed(name) {
						return usageErr("--%s comes from inside a session (SESSIOND_SESSION_ID); from outside, only --resolve", name)
					}
				}
				return a.resolveFromOutside(cmd.Context(), args, r.Resolve)
			}
			if len(args) > 0 {
				return usageErr("a directory is taken with --resolve alone, from outside a session: got %q", args[0])
			}
			if id == "" {
				var err error
				if id, err = sessionFromEnv(); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("progress") {
				r.Progress = &progress
			}
			if !cmd.Flags().Changed("next") {
				r.Next = nil
			}
			if !cmd.Flags().Changed("blocker") {
				r.Blockers = nil
			}
			if err := checkResolve(r.Resolve); err != nil {
				return err
			}
			given := false
			for _, name := range []string{"summary", "next", "blocker", "resolve", "plan", "progress", "task", "step", "status", "last-action"} {
				given = given || cmd.Flags().Changed(name)
			}
			if !given {
				return usageErr("nothing to report: give at least one of --summary, --next, --blocker, --resolve, --plan, --progress, --task, --step, --status")
			}
			got, err := a.client.Report(cmd.Context(), id, r)
			if err != nil {
				return badValue(err)
			}
			if a.json {
				return a.printJSON(got)
			}
			fmt.Fprintln(a.out, "✓ Report recorded")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Summary, "summary", "", "what this session did (≤ 500 characters)")
	f.StringArrayVar(&r.Next, "next", nil, "a next action for the next session (repeatable, ≤ 5)")
	f.StringArrayVar(&r.Blockers, "blocker", nil, "a question that needs a human: opens a blocker with an id (repeatable)")
	f.StringArrayVar(&r.Resolve, "resolve", nil, "resolve the open blocker with this id, or all of them (repeatable)")
	f.StringVar(&r.Plan, "plan", "", "the current plan")
	f.Float64Var(&progress, "progress", 0, "progress in percent, 0 to 100")
	f.StringVar(&r.Task, "task", "", "the task being worked on")
	f.StringVar(&r.Step, "step", "", "the current step as N/M")
	f.StringVar(&r.Status, "status", "", "task status: completed, in_progress, blocked, failed")
	f.StringVar(&r.LastAction, "last-action", "", "the last thing done")
	f.StringVar(&session, "session", "", "session id (default $SESSIOND_SESSION_ID)")
	return cmd
}

// liveIn is a live session of the project in dir, nil for none.
func (a *app) liveIn(ctx context.Context, dir string) *ipc.SessionRow {
	rows, err := a.client.SessionRows(ctx, ipc.ListOptions{})
	if err != nil {
		return nil
	}
	for i, r := range rows {
		if r.ProjectDir == dir && ipc.Live(r.State) {
			return &rows[i]
		}
	}
	return nil
}

// checkResolve checks --resolve's values: blocker ids, or all.
func checkResolve(ids []string) error {
	for _, id := range ids {
		if id == "all" {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(id, "#")); err != nil || n <= 0 {
			return usageErr("--resolve %q: want a blocker id (sessionctl state lists them) or all", id)
		}
	}
	return nil
}

// resolveFromOutside resolves blockers of the project in args[0] (default
// .) and says what is resolved and what is still open.
func (a *app) resolveFromOutside(ctx context.Context, args, ids []string) error {
	if err := checkResolve(ids); err != nil {
		return err
	}
	dir, err := absDir(argOrHere(args))
	if err != nil {
		return err
	}
	resp, err := a.client.ResolveBlockers(ctx, dir, ids)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(resp)
	}
	for _, b := range resp.Resolved {
		fmt.Fprintf(a.out, "✓ Resolved #%d: %s\n", b.ID, ipc.TerminalLine(b.Question))
	}
	switch {
	case len(resp.Sessions) > 0:
		fmt.Fprintf(a.out, "  told the live session %s\n", strings.Join(resp.Sessions, ", "))
	default:
		fmt.Fprintln(a.out, "  in the project's session state: the next session starts with it")
	}
	if len(resp.Open) > 0 {
		fmt.Fprintf(a.out, "  %s still open\n", plural(len(resp.Open), "blocker"))
	}
	return nil
}

// plural says "1 file" or "3 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
