// Package agent knows the coding agents sessiond runs: what to add to their
// command line so that they report to sessiond, how to read the events their
// hooks send and the usage their transcripts record, how to find their
// conversation and how to resume it.
//
// An Adapter does all of that for one agent. Detect picks the adapter from
// the spec's agent setting and the command's executable: Claude Code
// (claude.go), Codex (codex.go), or Generic (generic.go), which runs any
// other command untouched and knows nothing of it. Adding another agent is
// one file that implements Adapter and registers it with the executable
// names it answers to.
//
// What each adapter adds to a command line, measured with the real CLIs:
//
//   - Claude Code: --session-id with a UUID sessiond chose (so the
//     conversation id is known before the agent starts), --settings with a
//     file under the session's directory whose hooks run
//     `sessionctl hook claude-code` (the user's own settings files keep
//     working; a --settings of the user's own is merged into that file,
//     since Claude Code keeps only the last --settings it is given), and
//     --mcp-config with a server that runs `sessionctl mcp`. With --resume
//     it continues the conversation instead.
//   - Codex: -c notify=[sessionctl, "hook", "codex", ...] (chaining the
//     user's own notify program) and -c mcp_servers.sessiond={...}. Codex
//     gives an MCP server only the environment it is told to, so the entry
//     carries SESSIOND_SESSION_ID and SESSIOND_SOCKET.
//
// The agent's state comes only from its own events, never from its screen:
// a permission or question prompt is waiting (with the reason), the end of a
// turn is waiting for the next prompt in an interactive session and idle in
// a headless one, a prompt or a tool call is working.
//
// Usage (input, output, cache read and cache write tokens, and the cost
// where the agent reports it) is read from the transcript as it grows by a
// Transcript, which keeps its offset, reads only appended bytes, bounds the
// memory one line may take, and survives truncated, replaced, missing and
// malformed files.
//
// The package writes the files it hands to an agent through daemon/state
// (atomically, mode 0600) and runs nothing itself.
package agent
