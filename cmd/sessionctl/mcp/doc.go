// Package mcp is `sessionctl mcp`: a Model Context Protocol server on stdio
// that gives the agent of a sessiond session a control surface of its own,
// as tools the model can call:
//
//   - time_remaining: time left before the deadline, whether the session
//     was warned, the token and cost budget, and how much the agent may
//     still extend it;
//   - report: what only the agent knows (summary, next actions, blockers to
//     add or resolve, plan, progress, task, step, status), for the handoff
//     and the session state;
//   - checkpoint: a checkpoint of the project now;
//   - handoff: the previous session's handoff and the next task;
//   - extend: move the deadline later, within the cap the spec grants
//     (agent_may_extend; none by default, and then the tool is not offered).
//
// The server talks to the daemon through the small Daemon interface, so it
// depends on no wire format; sessionctl adapts its ipc client to it. It is
// built on the official Go SDK (github.com/modelcontextprotocol/go-sdk).
// Bad input (a request that is not JSON-RPC, arguments of the wrong shape)
// gets a JSON-RPC error or a tool error naming what is wrong; a client that
// goes away mid-call cancels the call's context and ends the server.
package mcp
