// Package ipc is sessiond's local API as its clients see it: the wire types
// (requests, responses, records, events), the interfaces the daemon
// implements and the server adapts requests to, and the Go client that
// sessionctl uses. The HTTP server itself, with the one table of every
// route, is package ipc/server, so that a client links no server code.
//
// The API is JSON under /v1. Errors are {"error": "...", "code": "..."} with
// a fitting HTTP status; streams (logs, events) are flushed as they are
// written, events as one JSON object per line. The package knows nothing of
// processes or files.
package ipc
