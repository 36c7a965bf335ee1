package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd returns the hidden `man DIR` command: a man page (section 1)
// for every command, written into DIR, for the packages. The date in the
// pages is $SOURCE_DATE_EPOCH when set, so that builds are reproducible.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			root.DisableAutoGenTag = true
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			header := &doc.GenManHeader{Section: "1", Source: "sessiond " + version, Manual: "sessiond manual"}
			if err := doc.GenManTree(root, header, args[0]); err != nil {
				return fmt.Errorf("write man pages into %s: %w", args[0], err)
			}
			return nil
		},
	}
}
