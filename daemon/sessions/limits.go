package sessions

import (
	"math"
	"os"
	"sync"
	"time"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// trusted reports whether uid's requests are not limited: root's and the
// daemon's own user's.
func (d *Service) trusted(uid int) bool {
	return uid == 0 || uid == os.Geteuid()
}

// startLimiter is max_starts_per_minute_per_user: a token bucket per user
// that holds a minute's allowance and refills it evenly over the minute.
type startLimiter struct {
	clock     session.Clock
	perMinute int

	mu      sync.Mutex
	buckets map[int]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take takes n starts of uid's allowance, or refuses them all with a 429
// that says when n will be allowed.
func (l *startLimiter) take(uid, n int) error {
	if l.perMinute <= 0 || n <= 0 {
		return nil
	}
	rate := float64(l.perMinute) / float64(time.Minute)
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[int]*bucket{}
	}
	if len(l.buckets) > 64 {
		l.forget(now)
	}
	b := l.buckets[uid]
	if b == nil {
		b = &bucket{tokens: float64(l.perMinute), at: now}
		l.buckets[uid] = b
	}
	b.tokens = math.Min(float64(l.perMinute), b.tokens+float64(now.Sub(b.at))*rate)
	b.at = now
	if float64(n) <= b.tokens {
		b.tokens -= float64(n)
		return nil
	}
	if n > l.perMinute {
		return ipc.TooMany("max_starts_per_minute_per_user (%d): %d starts at once can never be allowed; start at most %d at a time", l.perMinute, n, l.perMinute)
	}
	wait := time.Duration((float64(n) - b.tokens) / rate).Round(time.Second)
	return ipc.TooMany("max_starts_per_minute_per_user (%d): this user has started as many sessions as a minute allows; %d more allowed in %s", l.perMinute, n, max(wait, time.Second))
}

// forget drops the buckets that are full again, so that the map holds only
// the users who started sessions in the last minute.
func (l *startLimiter) forget(now time.Time) {
	for uid, b := range l.buckets {
		if now.Sub(b.at) >= time.Minute {
			delete(l.buckets, uid)
		}
	}
}
