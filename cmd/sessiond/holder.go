package main

import (
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
