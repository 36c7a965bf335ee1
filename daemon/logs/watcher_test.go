package logs

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestWatcherCoalescesAFlood writes a log 2000 times, a write every 100 µs
// (a terminal's reads of a busy child), and checks that the daemon
// handles a small fraction of that many events while the last write is
// still seen: inotify merges the writes made while the watcher leaves its
// events unread.
func TestWatcherCoalescesAFlood(t *testing.T) {
	w, err := NewWatcher(zap.NewNop(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	path := filepath.Join(t.TempDir(), "output.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mu sync.Mutex
	var calls int
	var last time.Time
	unwatch := w.WatchLog(path, func(at time.Time) {
		mu.Lock()
		calls++
		last = at
		mu.Unlock()
	})
	defer unwatch()

	const writes = 2000
	var end time.Time
	for i := range writes {
		if i > 0 {
			// A sleep this short would last a millisecond or more.
			for at := time.Now(); time.Since(at) < 100*time.Microsecond; {
			}
		}
		if _, err := f.WriteString("a line of output\n"); err != nil {
			t.Fatal(err)
		}
		end = time.Now()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		seen, n := last, calls
		mu.Unlock()
		if !seen.Before(end) {
			t.Logf("%d writes, %d handled (%d events)", writes, n, w.events.Load())
			if n > writes/4 {
				t.Errorf("%d writes handled as %d events, want at most %d", writes, n, writes/4)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last write was not seen: the last one seen was %v before it", end.Sub(seen))
		}
		time.Sleep(time.Millisecond)
	}
}
