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
// handles a small fraction of that many events, fewer as the flood goes
// on, while the last write is still seen: inotify merges the writes made
// while the watcher leaves its events unread.
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
	start := time.Now()
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
			t.Logf("%d writes in %v, %d handled (%d events)", writes, end.Sub(start), n, w.events.Load())
			// Once the flood is on, a wake-up every coalesceMax, not every
			// coalesceGap.
			if most := int(end.Sub(start)/(coalesceMax/2)) + 8; n > most {
				t.Errorf("%d writes in %v handled as %d events, want at most %d", writes, end.Sub(start), n, most)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last write was not seen: the last one seen was %v before it", end.Sub(seen))
		}
		time.Sleep(time.Millisecond)
	}
}
