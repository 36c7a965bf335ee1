package registry

import (
	"errors"
	"testing"

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
