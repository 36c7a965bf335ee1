// Package memory hands back to the system, a moment after many sessions
// started or ended, the memory their starts and stops used on the way
// (requests, spawns, record and file writes): the Go runtime would
// otherwise keep it as room for a heap that an idle daemon does not need,
// and a daemon of 1000 idle sessions would hold half as much again as they
// use. With it go the pages of the executable that start-up and the run
// faulted in (package exepages): most of the daemon's resident set. The
// same is done once the API has been quiet for a while after requests:
// serving a few `sessionctl ps` faulted 5 MiB of the executable in.
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
	// quiet settles once the API has been quiet for Quiet after a request
	// (lastServed); nil while no request waits for it.
	quiet      session.Timer
	lastServed time.Time
	// settled counts the settlings, for tests.
	settled int
	// stopped: the daemon is shutting down; nothing is armed any more.
	stopped bool
}

// After and Delay: how many starts and ends make a settling worthwhile,
// and how long after the last one it comes (the last answer is written
// first, and a run of them settles once, when it is over).
const (
	After = 64
	Delay = 2 * time.Second
)

// Quiet is how long the API must have been quiet after a request for the
// daemon to settle. Long enough that a person's commands one after the
// other, or a dashboard's polls, never wait for the pages a settling lets
// go of; it comes once per quiet spell.
const Quiet = time.Minute

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
	if s.n < After || s.stopped {
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
	if s.stopped {
		return
	}
	if s.t != nil {
		s.t.Stop()
	}
	s.t = s.clock.AfterFunc(Delay, func() { s.settleKeeping(true) })
}

func (s *Settler) settle() { s.settleKeeping(false) }

// Served notes an API request answered: the daemon settles once the API
// has then been quiet for Quiet.
func (s *Settler) Served() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastServed = s.clock.Now()
	if s.quiet == nil && !s.stopped {
		s.quiet = s.clock.AfterFunc(Quiet, s.settleIfQuiet)
	}
}

// settleIfQuiet settles if no request came in the last Quiet, and waits
// for the rest of it otherwise.
func (s *Settler) settleIfQuiet() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	if wait := Quiet - s.clock.Now().Sub(s.lastServed); wait > 0 {
		s.quiet = s.clock.AfterFunc(wait, s.settleIfQuiet)
		s.mu.Unlock()
		return
	}
	s.quiet = nil
	s.mu.Unlock()
	s.settleKeeping(true)
}

// Stop disarms the settler for good: a daemon that shuts down settles no
// more.
func (s *Settler) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for _, t := range []session.Timer{s.t, s.quiet} {
		if t != nil {
			t.Stop()
		}
	}
	s.t, s.quiet = nil, nil
}

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
