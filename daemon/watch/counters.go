package watch

import "sync/atomic"

// Counters are what a hub's inotify reader has handled since it started.
type Counters struct {
	// Events are the inotify events read (for every project).
	Events uint64
	// Overflows are the times the kernel's queue overflowed, each one a
	// rescan of every project.
	Overflows uint64
}

// hubCounters are a hub's Counters as the reader updates them.
type hubCounters struct {
	events, overflows atomic.Uint64
}

// Counters returns what the hub's inotify reader has handled so far.
func (h *Hub) Counters() Counters {
	return Counters{Events: h.counts.events.Load(), Overflows: h.counts.overflows.Load()}
}
