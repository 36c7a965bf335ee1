package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/daemon/term"
)

// newHolderCmd is the hidden holder mode: the daemon starts one per terminal
// session, hands it the spec on stdin and reads one ready line on stdout.
func newHolderCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "holder",
		Short:  "Hold a session's terminal (started by the daemon)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := term.RunHolder(cmd.Context(), os.Stdin, os.Stdout); err != nil {
				return &exitError{1, err}
			}
			return nil
		},
	}
}

// isHolderMode reports whether the daemon started this process as a
// terminal holder. The holder lives as long as its session, one per
// terminal: it is dispatched before the command tree is built, so that
// nothing of the other commands stays in its memory.
func isHolderMode(args []string) bool { return len(args) == 1 && args[0] == "holder" }

// runHolder runs the holder mode and returns its exit code.
func runHolder() int {
	if err := term.RunHolder(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sessiond holder:", err)
		return 1
	}
	return 0
}
