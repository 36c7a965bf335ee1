package daemon

import (
	"runtime/debug"
	"testing"
	"time"
)

// TestSettlerCountsARun: a settling is armed once settleAfter starts and
// ends have been counted, and a run of them settles once, when it is over.
func TestSettlerCountsARun(t *testing.T) {
	var s settler
	s.after(settleAfter - 1)
	s.mu.Lock()
	armed := s.t != nil
	s.mu.Unlock()
	if armed {
		t.Fatal("armed before settleAfter")
	}
	s.after(1)
	s.mu.Lock()
	armed, n := s.t != nil, s.n
	s.mu.Unlock()
	if !armed || n != settleAfter {
		t.Fatalf("armed %v, n %d after %d", armed, n, settleAfter)
	}
	deadline := time.Now().Add(settleDelay + 5*time.Second)
	for {
		s.mu.Lock()
		n = s.n
		s.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never settled")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gcPercent reads GOGC (by setting it to what it is).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestSettlerRaisesGOGCForARun: a run raises GOGC to burstGCPercent until
// it settles, then puts back the daemon's own; a GOGC already higher, or
// off, is left as it is.
func TestSettlerRaisesGOGCForARun(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	for _, own := range []int{50, 500, -1} {
		debug.SetGCPercent(own)
		var s settler
		s.after(settleAfter)
		want := burstGCPercent
		if own < 0 || own >= burstGCPercent {
			want = own
		}
		if got := gcPercent(); got != want {
			t.Errorf("GOGC %d: during the run %d, want %d", own, got, want)
		}
		s.t.Stop()
		s.settle()
		if got := gcPercent(); got != own {
			t.Errorf("GOGC %d: after the run %d, want it back", own, got)
		}
	}
}
