package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

func (a *app) restartCmd() *cobra.Command {
	var grace string
	cmd := &cobra.Command{
		Use:   "restart [--grace D] ID|DIR",
		Short: "Stop the session if it runs, then start the same spec in the same project (linked by restart_of)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if grace != "" {
				if g, err := config.ParseDuration(grace); err != nil || g.Duration < 0 {
					return usageErr("--grace %q: want a duration such as 10s or 0s", grace)
				}
			}
			id, err := a.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			environ := os.Environ()
			if remote != nil {
				environ = nil // this host's environment is no use there
			}
			resp, err := a.client.Restart(cmd.Context(), id, ipc.RestartRequest{Grace: grace, Environ: environ})
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(resp)
			}
			for _, n := range resp.Notices {
				fmt.Fprintln(a.errOut, "sessionctl: warning:", ipc.TerminalLine(n))
			}
			fmt.Fprintf(a.out, "%s restarted as %s\n", resp.Session.RestartOf, resp.Session.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&grace, "grace", "", "time between the stop signal and SIGKILL (default the session's stop_grace)")
	return cmd
}

func (a *app) rmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID|DIR...",
		Short: "Remove ended sessions: their records, logs and handoff archives (never the project's .sessiond)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var failed error
			// --json: what prune answers, the ids removed.
			removed := ipc.PruneResponse{Removed: []string{}}
			for _, arg := range args {
				id, err := a.resolve(cmd.Context(), arg)
				if err == nil {
					err = a.client.Remove(cmd.Context(), id)
				}
				if err != nil {
					a.report(err)
					failed = &exitError{exitFailed, fmt.Errorf("%s: not removed", arg)}
					continue
				}
				removed.Removed = append(removed.Removed, id)
				if !a.json {
					fmt.Fprintln(a.out, id)
				}
			}
			if a.json {
				if err := a.printJSON(removed); err != nil {
					return err
				}
			}
			return failed
		},
	}
}

func (a *app) pruneCmd() *cobra.Command {
	var older string
	cmd := &cobra.Command{
		Use:   "prune [--older-than D]",
		Short: "Remove every ended session (that ended more than D ago)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if older != "" {
				if d, err := config.ParseDuration(older); err != nil || d.Duration < 0 {
					return usageErr("--older-than %q: want a duration such as 24h", older)
				}
			}
			resp, err := a.client.Prune(cmd.Context(), ipc.PruneRequest{OlderThan: older})
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(resp)
			}
			for _, id := range resp.Removed {
				fmt.Fprintln(a.out, id)
			}
			fmt.Fprintf(a.errOut, "removed %s\n", plural(len(resp.Removed), "session"))
			return nil
		},
	}
	cmd.Flags().StringVar(&older, "older-than", "", "keep sessions that ended more recently than this (e.g. 24h)")
	return cmd
}
