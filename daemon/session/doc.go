// Package session is one supervised run of a command, as an actor: one
// loop owns everything of the session — its record, its child, the
// project's watch, its checkpoint schedule, its sidecars, its timers and
// its restart history — and every change is a message to it or an event
// it takes (run.go). The loop takes what happened from one place (next:
// a request, the child's exit, a timer, a schedule tick, a checkpoint's or
// a worker's result) and hands it to the step function of its phase:
// starting (start.go), running (running.go), stopping (stop.go) or ending
// (end.go). It alone writes the session's record, in order, each write with
// a sequence number that only grows, and it publishes an immutable
// snapshot after each change, so that readers (ps, inspect, the dashboard)
// never wait on a busy session and all see the same.
//
// Requests are small typed messages (inbox.go), each with a reply channel
// of its own. What would block the loop — the start's preflight and
// sidecars, the end's kills, the watcher's last barrier, git facts and the
// handoff's writes — runs on a worker that owns the session's state until
// it hands back what it did; meanwhile the loop answers every request at
// once (a stop sent while the session ends returns, its caller waiting for
// Done; anything else gets a conflict that names the end).
//
// A session that nothing happens to holds no goroutine: the loop parks it
// when nothing is left, and whatever happens to it wakes it (kick). A
// thousand idle sessions cost their records and timers, not a thousand
// stacks.
//
// A session is handed the services it uses (Deps: clock, logger, event
// publisher, record writer, watch hub, checkpointer, scheduler, output
// watcher) rather than a pointer to the daemon. A new session is Started;
// one loaded from an earlier daemon's record is Recovered (adopted, or
// ended as found). End reasons carry their policies (reason.go); the
// deadline, warning and idle arithmetic (timers.go) and the account
// written at the end (handoff.go) are pure functions, tested without
// sleeping.
//
// An end is recorded before the files that tell of it are written, and
// each of those steps may run twice without doubling anything, so that a
// daemon killed in the middle of an end finishes that end after its restart
// instead of ending the session a second time.
package session
