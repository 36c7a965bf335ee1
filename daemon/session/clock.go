package session

import (
	"sync"
	"time"
)

// Clock is the time a session lives by: the deadline, the warning, idle
// detection and restart backoff read it, so that their logic is tested
// without sleeping.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f, on a goroutine of its own, d from now; its
	// Timer's C is nil. f must not block.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// RealClock is the system clock.
type RealClock struct{}

// Now returns the current time.
func (RealClock) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (RealClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// AfterFunc returns a time.AfterFunc timer.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// FakeClock is a Clock that moves only when told to, for tests.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// NewFakeClock returns a FakeClock standing at now.
func NewFakeClock(now time.Time) *FakeClock { return &FakeClock{now: now} }

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the clock has been advanced d.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), c: make(chan time.Time, 1), clock: c}
	if d <= 0 {
		t.fired = true
		t.c <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// AfterFunc returns a timer that calls f when the clock has been advanced
// d (at once, on a goroutine of its own, when d <= 0).
func (c *FakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f, clock: c}
	if d <= 0 {
		t.fired = true
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock by d and fires every timer that is due.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	live := c.timers[:0]
	var funcs []func()
	for _, t := range c.timers {
		if !t.fired && !t.at.After(c.now) {
			t.fired = true
			if t.f != nil {
				funcs = append(funcs, t.f)
			} else {
				t.c <- c.now
			}
			continue
		}
		if !t.fired {
			live = append(live, t)
		}
	}
	c.timers = live
	c.mu.Unlock()
	for _, f := range funcs {
		f()
	}
}

// Pending returns how many timers wait to fire (those stopped are gone).
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type fakeTimer struct {
	at    time.Time
	c     chan time.Time // nil for an AfterFunc timer
	f     func()
	fired bool
	clock *FakeClock
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.fired {
		return false
	}
	t.fired = true
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			break
		}
	}
	return true
}
