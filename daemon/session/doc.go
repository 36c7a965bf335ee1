// Package session is one supervised run of a command, as an actor: one
// goroutine at a time owns everything of the session — its record, its
// child, the project's watch, its checkpoint schedule, its sidecars, its
// timers and its restart history — and every change is a message to it
// (stop, extend, signal, report, checkpoint, schedule ticks, the child's
// exit). It alone writes the session's record, in order, each write with
// a sequence number that only grows, and it publishes an immutable
// snapshot after each write, so that readers (ps, inspect) never wait on a
// busy session.
//
// A running session that nothing happens to holds no goroutine (run.go):
// what happens to it wakes it — its child's exit (the reaper's callback),
// its timers, a checkpoint tick or result, a request — on a goroutine that
// handles everything ready, one thing at a time, and parks it again. A
// thousand idle sessions cost their records and timers, not a thousand
// stacks.
//
// A session is handed the services it uses (Deps: clock, logger, event
// publisher, record writer, watch hub, checkpointer, scheduler, output
// watcher) rather than a pointer to the daemon. Its start (start.go) and
// its end (end.go) each read top to bottom in the order of DESIGN §4; end
// reasons carry their policies (reason.go); the deadline, warning and idle
// arithmetic (timers.go) and the account written at the end (handoff.go)
// are pure functions, tested without sleeping.
//
// An end is recorded before the files that tell of it are written, and
// each of those steps may run twice without doubling anything, so that a
// daemon killed in the middle of an end finishes that end after its restart
// instead of ending the session a second time.
package session
