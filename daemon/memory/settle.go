// Package memory hands back to the system, a moment after many sessions
// started or ended, the memory their starts and stops used on the way
// (requests, spawns, record and file writes): the Go runtime would
// otherwise keep it as room for a heap that an idle daemon does not need,
// and a daemon of 1000 idle sessions would hold half as much again as they
// use. With it go the pages of the executable that start-up and the run
// faulted in (package exepages): most of the daemon's resident set.
package memory

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/sessiond/sessiond/daemon/memory/exepages"
	"github.com/sessiond/sessiond/daemon/session"
)

// Settler counts starts and ends and settles the heap after a run of them.
type Settler struct {
	clock session.Clock
	// free hands the memory back (debug.FreeOSMemory, twice).
	free func()

	mu sync.Mutex
	n  int // starts and ends since the last settling
	t  session.Timer
	// settled counts the settlings, for tests.
	settled int
}

// After and Delay: how many starts and ends make a settling worthwhile,
// and how long after the last one it comes (the last answer is written
// first, and a run of them settles once, when it is over).
const (
	After = 64
	Delay = 2 * time.Second
)

// NewSettler returns a settler on clock.
func NewSettler(clock session.Clock) *Settler {
	return &Settler{clock: clock, free: func() {
		// Twice: what the first collection finds in sync.Pools (the buffer
		// encoding/json kept from the burst's largest reply, a megabyte for
		// a thousand starts) it only sets aside, and the second frees.
		debug.FreeOSMemory()
		debug.FreeOSMemory()
		_, _ = exepages.Drop()
	}}
}

// Count counts n starts or ends.
func (s *Settler) Count(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += n
	if s.n < After {
		return
	}
	if s.t != nil {
		s.t.Stop()
	}
	s.t = s.clock.AfterFunc(Delay, s.settle)
}

// Soon settles Delay from now, whatever was counted: once the daemon is
// up, for what its start-up used. It leaves the count as it is: a run of
// starts that began with the daemon (a hundred, one after the other)
// still settles when it is over.
func (s *Settler) Soon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t != nil {
		s.t.Stop()
	}
	s.t = s.clock.AfterFunc(Delay, func() { s.settleKeeping(true) })
}

func (s *Settler) settle() { s.settleKeeping(false) }

// settleKeeping settles; the count starts again unless keep.
func (s *Settler) settleKeeping(keep bool) {
	s.mu.Lock()
	if !keep {
		s.n = 0
	}
	s.settled++
	s.mu.Unlock()
	s.free()
}

// Settled returns how many times the heap was settled.
func (s *Settler) Settled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settled
}
