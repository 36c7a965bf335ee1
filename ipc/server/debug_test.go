package server

import (
	"errors"
	"net/http"
	"testing"

	"github.com/sessiond/sessiond/ipc"
)

// TestProfileCaller: the profiles are root's and the daemon's own user's;
// anyone else the socket lets in gets 403.
func TestProfileCaller(t *testing.T) {
	const self = 1000
	for _, uid := range []int{0, self} {
		if err := profileCaller(ipc.Caller{UID: uid, PID: 1}, self); err != nil {
			t.Errorf("uid %d: %v", uid, err)
		}
	}
	err := profileCaller(ipc.Caller{UID: 1001, PID: 1}, self)
	var e *ipc.Error
	if !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("uid 1001: %v, want 403", err)
	}
}
