// Package server is the API's HTTP server over the daemon's Unix socket.
//
// limit.go bounds what a client can hold: a Listener caps the connections
// open at once, in total and per peer uid, answering the ones past a cap
// with 503 without handing them to the server, and survives running out
// of descriptors; Timeouts are the server's time limits, chosen so that
// idle and slow connections are closed while long-lived streams (logs -f,
// events -f) are never cut by a write timeout.
package server
