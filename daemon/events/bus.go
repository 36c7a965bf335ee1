// Package events is the daemon's event bus: every session's events fan out
// to the API's subscribers (events -f, the dashboard), each seeing only
// what its caller may, and to the observers the daemon wires in before the
// first event (notifications, metrics, the memory settler). It implements
// ipc.Events.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// Bus fans events out to subscribers. Publishing never waits for one: each
// follower has a queue of its own, handed on by a goroutine of its own, and
// a follower too far behind is told how many events it missed (an
// ipc.EventMissed in their place) rather than cut off or waited for.
type Bus struct {
	mu   sync.Mutex
	subs map[*follower]struct{}
	// history holds the last historySize events: a ring whose oldest is
	// at next once it is full (a thousand sessions ending at once publish
	// three thousand events, each of which moved the whole history down
	// by one under the bus's lock when it was a slice kept in order).
	history []ipc.Event
	next    int
	// observers see every event as it is published, before the
	// subscribers, on the publisher's goroutine, and must not block.
	observers []func(ipc.Event)
	closed    bool
	now       func() time.Time
	// behind is how many events a follower may be behind; the ones past
	// it are counted, not kept.
	behind int
}

var _ ipc.Events = (*Bus)(nil)

// historySize is how many recent events the bus keeps for events without -f.
const historySize = 256

// maxBehind is how many events a follower may be behind before it misses
// some: a stop of a thousand sessions publishes two thousand (stopping,
// then ended) within a second, which a reader of events -f or the dashboard
// cannot always keep up with while the daemon is busy with those ends. The
// most a follower that reads nothing holds is this many events, a few MB
// with the records the ended events carry.
const maxBehind = 4096

// New returns a bus whose events without a time are stamped with now.
func New(now func() time.Time) *Bus {
	return &Bus{subs: map[*follower]struct{}{}, now: now, behind: maxBehind}
}

// follower is one subscription with Follow: what was published for it and
// not yet handed on. Its fields are the bus's, under the bus's lock.
type follower struct {
	caller ipc.Caller
	queued []ipc.Event
	// missed counts the events published after queued's that did not
	// fit; the follower is told of them after queued's.
	missed int
	// ended: the bus is closed; the follower hands on what is queued
	// and ends its stream.
	ended bool
	wake  chan struct{}
}

// Observe adds f to the functions that see every event first. It is set up
// before the first event is published.
func (b *Bus) Observe(f func(ipc.Event)) { b.observers = append(b.observers, f) }

// Publish sends ev to every subscriber allowed to see it.
func (b *Bus) Publish(ev ipc.Event) {
	if ev.Time.IsZero() {
		ev.Time = b.now()
	}
	for _, f := range b.observers {
		f(ev)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.history) < historySize {
		b.history = append(b.history, ev)
	} else {
		b.history[b.next] = ev
		b.next = (b.next + 1) % historySize
	}
	for f := range b.subs {
		if !f.caller.Root() && f.caller.UID != ev.UID {
			continue
		}
		if len(f.queued) < b.behind {
			f.queued = append(f.queued, ev)
		} else {
			f.missed++
		}
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// Subscribe implements ipc.Events: with opt.Follow the stream of new events
// visible to c, closed when ctx ends; without, the recent events, then
// closed.
func (b *Bus) Subscribe(ctx context.Context, c ipc.Caller, opt ipc.EventOptions) (<-chan ipc.Event, error) {
	if !opt.Follow {
		return b.recent(c), nil
	}
	f := &follower{caller: c, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ipc.Unavailable("sessiond is shutting down")
	}
	b.subs[f] = struct{}{}
	b.mu.Unlock()
	out := make(chan ipc.Event)
	go b.forward(ctx, f, out)
	return out, nil
}

// forward hands f's events on to out in the order they were published, a
// missed count where they did not fit, until ctx ends, or until the bus is
// closed and all it queued is handed on.
func (b *Bus) forward(ctx context.Context, f *follower, out chan<- ipc.Event) {
	defer close(out)
	send := func(ev ipc.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			b.mu.Lock()
			delete(b.subs, f)
			b.mu.Unlock()
			return false
		}
	}
	var batch []ipc.Event
	for {
		b.mu.Lock()
		batch, f.queued = f.queued, batch[:0]
		missed, ended := f.missed, f.ended
		f.missed = 0
		b.mu.Unlock()
		for i := range batch {
			if !send(batch[i]) {
				return
			}
			batch[i] = ipc.Event{} // its data is not kept past its sending
		}
		if cap(batch) > historySize {
			batch = nil // a burst's queue is not kept after it
		}
		if missed > 0 && !send(b.missedEvent(missed)) {
			return
		}
		if ended {
			return
		}
		select {
		case <-f.wake:
		case <-ctx.Done():
			b.mu.Lock()
			delete(b.subs, f)
			b.mu.Unlock()
			return
		}
	}
}

// missedEvent tells a follower that n events did not reach it.
func (b *Bus) missedEvent(n int) ipc.Event {
	data, _ := json.Marshal(map[string]int{"missed": n})
	return ipc.Event{Type: ipc.EventMissed, Time: b.now(), Data: data,
		Message: fmt.Sprintf("%d events missed: this stream fell more than %d events behind", n, b.behind)}
}

// recent returns a closed channel holding the recent events visible to c.
func (b *Bus) recent(c ipc.Caller) <-chan ipc.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan ipc.Event, len(b.history))
	for _, part := range [][]ipc.Event{b.history[b.next:], b.history[:b.next]} {
		for _, ev := range part {
			if c.Root() || c.UID == ev.UID {
				ch <- ev
			}
		}
	}
	close(ch)
	return ch
}

// Refuse refuses new subscriptions from now on (the daemon is shutting
// down); those open go on.
func (b *Bus) Refuse() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// Close ends every subscription once it has handed on what it holds, and
// refuses new ones (daemon shutdown); events published later still reach
// the observers.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for f := range b.subs {
		delete(b.subs, f)
		f.ended = true
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}
