package logkeep

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/sessiond/sessiond/daemon/memory/exepages"
)

// restAfter is how long the keeper must have been quiet (nothing moved, no
// request) before it rests.
const restAfter = 10 * time.Second

// rest is the keeper's memory between bursts of output, as a terminal's
// holder has it: once nothing has moved for restAfter, the keeper hands
// back its free heap and the pages of its executable that the burst
// faulted in (the function tables the collector walks, most of them), and
// turns its collector off, so that the runtime's collection every two
// minutes does not fault them in again while nothing allocates. The next
// move or request turns the collector back on. The memory limit that
// Main sets bounds the heap meanwhile.
type rest struct {
	work    atomic.Uint64 // moves and requests so far
	resting atomic.Bool
	last    uint64 // work at the last tick
	// gc is the collector's target to go back to.
	gc int
}

// busy notes a move or a request; a resting keeper wakes.
func (r *rest) busy() {
	r.work.Add(1)
	if r.resting.Load() && r.resting.CompareAndSwap(true, false) {
		debug.SetGCPercent(r.gc)
	}
}

// tick is the check every restAfter: a keeper that was busy since the
// last one goes on (waking, had it rested meanwhile); one that was quiet
// rests, once per quiet spell.
func (r *rest) tick() {
	w := r.work.Load()
	if w != r.last {
		r.last = w
		if r.resting.CompareAndSwap(true, false) {
			debug.SetGCPercent(r.gc)
		}
		return
	}
	if r.resting.CompareAndSwap(false, true) {
		debug.SetGCPercent(-1)
		runtime.GC()
		debug.FreeOSMemory()
		_, _ = exepages.Drop()
	}
}

// run ticks until done is closed, and leaves the collector on.
func (r *rest) run(done <-chan struct{}) {
	t := time.NewTicker(restAfter)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.tick()
		case <-done:
			if r.resting.CompareAndSwap(true, false) {
				debug.SetGCPercent(r.gc)
			}
			return
		}
	}
}
