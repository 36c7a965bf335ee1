package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// bus fans events out to subscribers. A subscriber that cannot keep up is
// dropped (its channel closed) rather than slowing the daemon down.
type bus struct {
	mu   sync.Mutex
	subs map[chan ipc.Event]subscriber
	// history holds the last historySize events, oldest first.
	history []ipc.Event
	// tap, set before any event, sees every event as it is published,
	// before the subscribers, and must not block: the notifications.
	tap func(ipc.Event)
	// observe, when set (before any event), sees every event first, on
	// the publisher's goroutine: the metrics count them there.
	observe func(ipc.Event)
	// churn, when set (before any event), is told of every start and end.
	churn func(n int)
}

// historySize is how many recent events the bus keeps for events without -f.
const historySize = 256

type subscriber struct {
	caller ipc.Caller
}

func newBus() *bus { return &bus{subs: map[chan ipc.Event]subscriber{}} }

// subscribe returns a channel of events visible to c, closed when ctx ends.
func (b *bus) subscribe(ctx context.Context, c ipc.Caller) <-chan ipc.Event {
	ch := make(chan ipc.Event, 256)
	b.mu.Lock()
	b.subs[ch] = subscriber{caller: c}
	b.mu.Unlock()
	go func() {
		<-ctx.Done()
		b.drop(ch)
	}()
	return ch
}

func (b *bus) drop(ch chan ipc.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[ch]; ok {
		delete(b.subs, ch)
		close(ch)
	}
}

// Publish sends ev to every subscriber allowed to see it.
func (b *bus) Publish(ev ipc.Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if b.tap != nil {
		b.tap(ev)
	}
	if b.observe != nil {
		b.observe(ev)
	}
	if b.churn != nil && (ev.Type == ipc.EventStarted || ev.Type == ipc.EventEnded) {
		b.churn(1)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.history) == historySize {
		copy(b.history, b.history[1:])
		b.history = b.history[:historySize-1]
	}
	b.history = append(b.history, ev)
	for ch, s := range b.subs {
		if !s.caller.Root() && s.caller.UID != ev.UID {
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

// recent returns a closed channel holding the recent events visible to c.
func (b *bus) recent(c ipc.Caller) <-chan ipc.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan ipc.Event, len(b.history))
	for _, ev := range b.history {
		if c.Root() || c.UID == ev.UID {
			ch <- ev
		}
	}
	close(ch)
	return ch
}

// closeAll ends every subscription (daemon shutdown).
func (b *bus) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}
