package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func (a *app) uiCmd() *cobra.Command {
	var allContexts bool
	cmd := &cobra.Command{
		Use:   "ui [--all-contexts | --context a,b]",
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
			if allContexts || strings.Contains(a.context, ",") {
				hosts, err := a.contextHosts(a.context, allContexts)
				if err != nil {
					return err
				}
				for _, h := range hosts {
					args = append(args, "--context", h[0]+"="+h[1])
				}
			}
			if a.noColor {
				args = append(args, "--no-color")
			}
			return execHelper("sessionctl-ui", args)
		},
	}
	cmd.Flags().BoolVar(&allContexts, "all-contexts", false, "every context's sessions in one list, each with its host (--context a,b: those)")
	return cmd
}
