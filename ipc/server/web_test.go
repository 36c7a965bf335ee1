package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// slowTokens refuses every token but "good", after a moment: long enough
// for concurrent guesses to be under way together.
type slowTokens struct{}

func (slowTokens) Check(token string, _ time.Time) (ipc.Caller, string, error) {
	time.Sleep(20 * time.Millisecond)
	if token == "good" {
		return ipc.Caller{UID: 0}, ScopeRead, nil
	}
	return ipc.Caller{}, "", errors.New("unknown token")
}

// TestAuthFailuresBoundUnderConcurrency: guesses made together are held
// to the bound as guesses made one after the other are: at most
// authFailures a minute reach the token check, the rest are 429; and a
// token that passes does not count against it.
func TestAuthFailuresBoundUnderConcurrency(t *testing.T) {
	h := New(services(&backend{}), func(ipc.Caller) bool { return true }, zap.NewNop()).Web(WebOptions{Tokens: slowTokens{}})
	try := func(token string) int {
		req := httptest.NewRequest("GET", "/"+ipc.APIVersion+"/version", nil)
		req.RemoteAddr = "192.0.2.7:4242"
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for range 3 {
		if code := try("good"); code == http.StatusUnauthorized || code == http.StatusTooManyRequests {
			t.Fatalf("a good token: %d", code)
		}
	}
	var unauthorized, tooMany atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			switch try("guess") {
			case http.StatusUnauthorized:
				unauthorized.Add(1)
			case http.StatusTooManyRequests:
				tooMany.Add(1)
			}
		})
	}
	wg.Wait()
	if unauthorized.Load() != authFailures || tooMany.Load() != 40-authFailures {
		t.Fatalf("40 concurrent guesses: %d reached the check (401), %d were 429; want %d and %d",
			unauthorized.Load(), tooMany.Load(), authFailures, 40-authFailures)
	}
	if code := try("good"); code != http.StatusTooManyRequests {
		t.Fatalf("past the bound, even a good token is held off until the minute is over: got %d", code)
	}
	req := httptest.NewRequest("GET", "/"+ipc.APIVersion+"/version", nil)
	req.RemoteAddr = "192.0.2.7:4242"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "60" {
		t.Errorf("held off: %d, Retry-After %q; want 429 saying when to try again", rec.Code, rec.Header().Get("Retry-After"))
	}
}
