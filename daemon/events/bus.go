// Package events is the daemon's event bus: every session's events fan out
// to the API's subscribers (events -f, the dashboard), each seeing only
// what its caller may, and to the observers the daemon wires in before the
// first event (notifications, metrics, the memory settler). It implements
// ipc.Events.
package events

import (
	"context"
	"sync"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// Bus fans events out to subscribers. A subscriber that cannot keep up is
// dropped (its channel closed) rather than slowing the daemon down.
type Bus struct {
	mu   sync.Mutex
	subs map[chan ipc.Event]ipc.Caller
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
}

var _ ipc.Events = (*Bus)(nil)

// historySize is how many recent events the bus keeps for events without -f.
const historySize = 256

// New returns a bus whose events without a time are stamped with now.
func New(now func() time.Time) *Bus {
	return &Bus{subs: map[chan ipc.Event]ipc.Caller{}, now: now}
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
	for ch, c := range b.subs {
		if !c.Root() && c.UID != ev.UID {
			continue
		}
		select {
		case ch <- ev:
		default:
			delete(b.subs, ch)
			close(ch)
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
	ch := make(chan ipc.Event, 256)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ipc.Unavailable("sessiond is shutting down")
	}
	b.subs[ch] = c
	b.mu.Unlock()
	go func() {
		<-ctx.Done()
		b.drop(ch)
	}()
	return ch, nil
}

func (b *Bus) drop(ch chan ipc.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[ch]; ok {
		delete(b.subs, ch)
		close(ch)
	}
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

// Close ends every subscription and refuses new ones (daemon shutdown);
// events published later still reach the observers.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}
