// Package daemon is the supervisor: the registry of sessions, each
// session's state machine and timers, the event bus, crash recovery, and
// the implementation of the API that package ipc serves.
//
// Every live session is owned by one goroutine (session.run), which makes
// all of its transitions; requests reach it over a channel and readers take
// a snapshot of its record under a short lock. The registry is the only map
// of sessions. A session's end is written to disk before anyone is told it
// ended.
package daemon
