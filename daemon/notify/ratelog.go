package notify

import (
	"sync"
	"time"
)

// logEvery is the least time between two log lines about the same thing
// (drops, or failures of one rule): a flood is summed up, not replayed.
const logEvery = 10 * time.Second

// rateLog decides which of many similar log lines to write: the first of a
// key, then at most one per interval, each saying how many were left out
// since the last.
type rateLog struct {
	mu      sync.Mutex
	every   time.Duration
	now     func() time.Time
	last    map[string]time.Time
	skipped map[string]int
}

func newRateLog(every time.Duration, now func() time.Time) *rateLog {
	return &rateLog{every: every, now: now, last: map[string]time.Time{}, skipped: map[string]int{}}
}

// allow reports whether a line about key may be written now, and how many
// were left out before it.
func (l *rateLog) allow(key string) (ok bool, skipped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if t, seen := l.last[key]; seen && now.Sub(t) < l.every {
		l.skipped[key]++
		return false, 0
	}
	if len(l.last) > 1024 {
		// Keys come from rules, which come and go with projects.
		clear(l.last)
		clear(l.skipped)
	}
	skipped = l.skipped[key]
	delete(l.skipped, key)
	l.last[key] = now
	return true, skipped
}
