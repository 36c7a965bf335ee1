package registry

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

func TestLookupPrefix(t *testing.T) {
	r := New()
	deps := session.Deps{Clock: session.RealClock{}, Log: zap.NewNop()}
	for _, id := range []string{"abc111", "abc222", "xyz333"} {
		r.Add(session.Load(ipc.Session{ID: id, State: ipc.StateEnded, UID: 0}, config.Spec{}, nil, nil, &deps))
	}
	c := ipc.Caller{UID: 0}
	if s, err := r.Lookup(c, "xy"); err != nil || s.ID() != "xyz333" {
		t.Errorf("lookup xy = %v, %v", s, err)
	}
	_, err := r.Lookup(c, "abc")
	var e *ipc.Error
	if !errors.As(err, &e) || e.Code != ipc.CodeAmbiguous || len(e.Candidates) != 2 {
		t.Errorf("lookup abc = %v, want ambiguous with 2 candidates", err)
	}
	if _, err := r.Lookup(c, "q"); !errors.Is(err, ipc.ErrNotFound) {
		t.Errorf("lookup q = %v, want not found", err)
	}
	if _, err := r.Lookup(ipc.Caller{UID: 1000}, "xyz"); !errors.Is(err, ipc.ErrNotFound) {
		t.Errorf("another user's session: %v, want not found", err)
	}
}

// TestAllOldestFirst: All lists every session by its start, oldest first,
// and sessions that started at the same time by id.
func TestAllOldestFirst(t *testing.T) {
	r := New()
	deps := session.Deps{Clock: session.RealClock{}, Log: zap.NewNop()}
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	starts := map[string]time.Time{
		"d4": t0.Add(3 * time.Second), "b2": t0.Add(time.Second), "a1": t0.Add(time.Second),
		"z9": t0, "c3": t0.Add(2 * time.Second), "e5": t0.Add(2 * time.Second).In(time.FixedZone("X", 3600)),
	}
	for id, at := range starts {
		r.Add(session.Load(ipc.Session{ID: id, State: ipc.StateEnded, StartedAt: at}, config.Spec{}, nil, nil, &deps))
	}
	var got []string
	for _, s := range r.All() {
		got = append(got, s.ID())
	}
	if want := []string{"z9", "a1", "b2", "c3", "e5", "d4"}; !slices.Equal(got, want) {
		t.Errorf("All: %v, want %v (by start, then id)", got, want)
	}
}
