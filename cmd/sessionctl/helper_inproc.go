//go:build !sessionctl_helpers

package main

import (
	"fmt"
	"os"

	"github.com/sessiond/sessiond/cmd/sessionctl/mcp"
	"github.com/sessiond/sessiond/cmd/sessionctl/ui"
)

// execHelper runs a command of sessionctl that make build and the packages
// make a binary of its own (helper_exec.go), here in this process: a
// sessionctl built alone (go install .../cmd/sessionctl) has no helpers
// beside it, and its mcp and ui work all the same, at the cost of the
// helpers' libraries in every command's start-up.
func execHelper(name string, args []string) error {
	var code int
	switch name {
	case "sessionctl-mcp":
		code = mcp.Main(args)
	case "sessionctl-ui":
		code = ui.Main(args)
	default:
		return fmt.Errorf("no helper %s", name)
	}
	if code != 0 {
		// The helper said why, as the binary of its own would have, and
		// ends the process as it would.
		os.Exit(code)
	}
	return nil
}
