package logkeep

import (
	"runtime/debug"
	"testing"
)

// A keeper rests once it has been quiet for a tick, its collector off, and
// wakes at the next move or request; a tick with work since the last one
// keeps it awake, or wakes it.
func TestQuietKeeperRests(t *testing.T) {
	on := debug.SetGCPercent(100)
	defer debug.SetGCPercent(on)
	gc := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	r := &rest{gc: 100}
	want := func(what string, resting bool) {
		t.Helper()
		if r.resting.Load() != resting {
			t.Fatalf("%s: resting %v, want %v", what, r.resting.Load(), resting)
		}
		if p := gc(); resting && p >= 0 || !resting && p != 100 {
			t.Fatalf("%s: the collector's target is %d (resting %v)", what, p, resting)
		}
	}
	r.busy()
	r.tick()
	want("a tick after a move", false)
	r.tick()
	want("a quiet tick", true)
	r.tick()
	want("another quiet tick", true)
	r.busy()
	want("a move while resting", false)
	r.tick()
	want("the tick after it", false)
	r.tick()
	want("quiet again", true)

	// A move that comes between a tick's look and its rest: the next tick
	// wakes the keeper, whatever the move saw.
	r.work.Add(1)
	r.tick()
	want("a tick after work it did not wake for", false)

	done := make(chan struct{})
	r.tick()
	want("resting before the keeper ends", true)
	close(done)
	r.run(done)
	want("the keeper ended", false)
}
