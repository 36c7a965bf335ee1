package daemon

import (
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
