package memory

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/session"
)

// TestSettlerCountsARun: a settling is armed once After starts and ends
// have been counted, and a run of them settles once, when it is over.
func TestSettlerCountsARun(t *testing.T) {
	clock := session.NewFakeClock(time.Unix(1e9, 0))
	s := NewSettler(clock)
	var freed atomic.Int32
	done := make(chan struct{}, 8)
	s.free = func() { freed.Add(1); done <- struct{}{} }
	s.Count(After - 1)
	if clock.Pending() != 0 {
		t.Fatal("armed before After")
	}
	s.Count(1)
	if clock.Pending() != 1 {
		t.Fatalf("%d timers after %d, want 1", clock.Pending(), After)
	}
	// The run goes on: each count puts the settling off.
	clock.Advance(Delay - time.Millisecond)
	s.Count(1)
	clock.Advance(Delay - time.Millisecond)
	if freed.Load() != 0 {
		t.Fatal("settled during the run")
	}
	clock.Advance(time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("never settled")
	}
	if n := s.Settled(); n != 1 || freed.Load() != 1 {
		t.Fatalf("settled %d times, freed %d, want once", n, freed.Load())
	}
	// A few more starts are no run.
	s.Count(After - 1)
	if clock.Pending() != 0 {
		t.Error("armed again before After")
	}
}

// TestSettlerSoon: Soon settles Delay later whatever was counted (the
// daemon's start-up), and counts after it start a run of their own.
func TestSettlerSoon(t *testing.T) {
	clock := session.NewFakeClock(time.Unix(1e9, 0))
	s := NewSettler(clock)
	done := make(chan struct{}, 8)
	s.free = func() { done <- struct{}{} }
	s.Soon()
	if clock.Pending() != 1 {
		t.Fatalf("%d timers after Soon, want 1", clock.Pending())
	}
	clock.Advance(Delay - time.Millisecond)
	select {
	case <-done:
		t.Fatal("settled before Delay")
	default:
	}
	clock.Advance(time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("never settled")
	}
	if n := s.Settled(); n != 1 {
		t.Fatalf("settled %d times, want 1", n)
	}
	s.Count(After - 1)
	if clock.Pending() != 0 {
		t.Error("armed again before After")
	}
}

// TestSettlerSoonDuringARun: start-up's settling, coming in the middle of
// a run of starts, leaves the run's count alone: the run still settles
// once it is over, however its starts fell on either side.
func TestSettlerSoonDuringARun(t *testing.T) {
	clock := session.NewFakeClock(time.Unix(1e9, 0))
	s := NewSettler(clock)
	done := make(chan struct{}, 8)
	s.free = func() { done <- struct{}{} }
	wait := func() {
		t.Helper()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("never settled")
		}
	}
	s.Soon()
	s.Count(After / 2)
	clock.Advance(Delay)
	wait() // start-up's
	s.Count(After / 2)
	if clock.Pending() != 1 {
		t.Fatalf("%d timers after %d starts across start-up's settling, want 1", clock.Pending(), After)
	}
	clock.Advance(Delay)
	wait()
	if n := s.Settled(); n != 2 {
		t.Fatalf("settled %d times, want 2", n)
	}
	s.Count(After - 1)
	if clock.Pending() != 0 {
		t.Error("armed again before After")
	}
}

// TestSettlerAfterQuiet: requests answered settle the daemon once the API
// has been quiet for Quiet after the last of them, once per quiet spell.
func TestSettlerAfterQuiet(t *testing.T) {
	clock := session.NewFakeClock(time.Unix(1e9, 0))
	s := NewSettler(clock)
	done := make(chan struct{}, 8)
	s.free = func() { done <- struct{}{} }
	settledSoon := func() bool {
		select {
		case <-done:
			return true
		case <-time.After(200 * time.Millisecond):
			return false
		}
	}
	s.Served()
	clock.Advance(Quiet / 2)
	s.Served()
	s.Served()
	if clock.Pending() != 1 {
		t.Fatalf("%d timers after three requests, want 1", clock.Pending())
	}
	clock.Advance(Quiet / 2)
	if settledSoon() {
		t.Fatal("settled Quiet after the first request, with a later one")
	}
	clock.Advance(Quiet/2 - time.Millisecond)
	if settledSoon() {
		t.Fatal("settled before Quiet after the last request")
	}
	clock.Advance(time.Millisecond)
	if !settledSoon() {
		t.Fatal("never settled once quiet")
	}
	if n := s.Settled(); n != 1 {
		t.Fatalf("settled %d times, want 1", n)
	}
	// Quiet goes on: no more settling until another request.
	if clock.Pending() != 0 {
		t.Fatalf("%d timers while quiet, want none", clock.Pending())
	}
	s.Served()
	clock.Advance(Quiet)
	if !settledSoon() {
		t.Fatal("a later request and quiet did not settle")
	}
	// The count of starts and ends is left as it was.
	s.Count(After - 1)
	if clock.Pending() != 0 {
		t.Error("armed by fewer than After starts after a quiet settling")
	}
}

// TestSettlerStop: a stopped settler (a daemon shutting down) disarms what
// was armed and arms nothing more.
func TestSettlerStop(t *testing.T) {
	clock := session.NewFakeClock(time.Unix(1e9, 0))
	s := NewSettler(clock)
	var freed atomic.Int32
	s.free = func() { freed.Add(1) }
	s.Served()
	s.Count(After)
	if clock.Pending() != 2 {
		t.Fatalf("%d timers armed, want 2", clock.Pending())
	}
	s.Stop()
	if clock.Pending() != 0 {
		t.Fatalf("%d timers left after Stop, want none", clock.Pending())
	}
	s.Served()
	s.Count(After)
	s.Soon()
	clock.Advance(2 * Quiet)
	if clock.Pending() != 0 || freed.Load() != 0 {
		t.Fatalf("after Stop: %d timers armed, %d settlings", clock.Pending(), freed.Load())
	}
}
