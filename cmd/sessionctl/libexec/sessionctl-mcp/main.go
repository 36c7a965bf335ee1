// Command sessionctl-mcp is the MCP server of `sessionctl mcp`, which execs
// it as
//
//	sessionctl-mcp --socket PATH --version V
//
// It serves the session named by SESSIOND_SESSION_ID on stdin/stdout.
package main

import (
	"os"

	"github.com/sessiond/sessiond/cmd/sessionctl/mcp"
)

func main() { os.Exit(mcp.Main(os.Args[1:])) }
