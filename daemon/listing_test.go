package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// TestListingUsageFromOneReading: a listing with stats measures every live
// session; within a second of a reading it shows what that reading found,
// unless a session listed was not in it; a second later it reads again.
func TestListingUsageFromOneReading(t *testing.T) {
	h := startClocked(t, nil)
	ctx := context.Background()
	list := func() map[string]ipc.Usage {
		t.Helper()
		rows, err := h.client.SessionRows(ctx, ipc.ListOptions{Stats: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]ipc.Usage{}
		for _, r := range rows {
			if r.Usage == nil {
				t.Fatalf("%s (%s) listed without usage", r.ID, r.State)
			}
			if r.Usage.Procs < 1 || r.Usage.RSSBytes <= 0 {
				t.Fatalf("%s: usage %+v, want its process and memory", r.ID, *r.Usage)
			}
			out[r.ID] = *r.Usage
		}
		return out
	}
	for range 2 {
		s := h.start(project(t), ipc.StartRequest{Command: []string{"sleep", "1000"}})
		h.waitState(s.ID, ipc.StateRunning)
	}
	if got := list(); len(got) != 2 {
		t.Fatalf("listed %d with usage, want 2", len(got))
	}
	third := h.start(project(t), ipc.StartRequest{Command: []string{"sleep", "1000"}})
	h.waitState(third.ID, ipc.StateRunning)
	first := list() // the third was not in the last reading: read again
	if _, ok := first[third.ID]; !ok || len(first) != 3 {
		t.Fatalf("after a start, listed %v, want all three", first)
	}
	// The memory of a sleep does not move, but the reading's time does:
	// the same reading shows the same CPU figure to the last digit.
	again := list()
	for id, u := range first {
		if again[id] != u {
			t.Errorf("%s: %+v, then %+v within the same second", id, u, again[id])
		}
	}
	h.clock.Advance(2 * time.Second)
	if later := list(); len(later) != 3 {
		t.Errorf("a second on, listed %d with usage, want 3", len(later))
	}
}
