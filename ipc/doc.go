// Package ipc is sessiond's local API: the wire types, the HTTP-over-Unix
// socket server that adapts requests to a Backend, and the Go client that
// sessionctl uses.
//
// The API is JSON under /v1. Errors are {"error": "...", "code": "..."} with
// a fitting HTTP status; streams (logs, events) are flushed as they are
// written, events as one JSON object per line. Every connection carries the
// peer's credentials (SO_PEERCRED), and the server refuses callers other than
// the daemon's own user, root and members of the allowed groups before any
// handler runs. The package knows nothing of processes or files: the daemon
// implements Backend.
package ipc
