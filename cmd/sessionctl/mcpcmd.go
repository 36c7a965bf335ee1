package main

import "github.com/spf13/cobra"

func (a *app) mcpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "An MCP server on stdio with the session's tools, for the agent",
		Long: "An MCP (Model Context Protocol) server on stdin/stdout that gives the agent of the session\n" +
			"named by SESSIOND_SESSION_ID its tools: time_remaining, report, checkpoint, handoff and, when the\n" +
			"spec grants agent_may_extend, extend. sessiond passes it to Claude Code and Codex itself; see\n" +
			"docs/agents.md to add it to another MCP client.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return execHelper("sessionctl-mcp", []string{"--socket", a.socket, "--version", version})
		},
	}
}
