package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func (a *app) uiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ui",
		Short: "A live terminal dashboard of every session",
		Long: `A live terminal dashboard of the sessions sessiond shows you: their state and
the agent's, the time used until the deadline, activity, checkpoints, restarts
and tokens; the selected session's record, output, handoff and checkpoints;
and the actions of sessionctl on it (? lists the keys). It follows the
daemon's events, and reconnects when the daemon comes back.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.json {
				return usageErr("ui is a terminal dashboard: it has no --json output (see sessionctl events -f --json)")
			}
			if !term.IsTerminal(int(os.Stdin.Fd())) || !term.IsTerminal(int(os.Stdout.Fd())) {
				return &exitError{exitFailed, errors.New("ui needs a terminal: run it in one, or use sessionctl ps and sessionctl events -f")}
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the sessionctl binary, whose commands the dashboard runs: %w", err)
			}
			args := []string{"--socket", a.socket, "--sessionctl", exe}
			if cmd.Flags().Changed("socket") {
				args = append(args, "--socket-given")
			}
			if remote != nil {
				args = append(args, "--host", remote.URL)
			}
			if a.noColor {
				args = append(args, "--no-color")
			}
			return execHelper("sessionctl-ui", args)
		},
	}
}
