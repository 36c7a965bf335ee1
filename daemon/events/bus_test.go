package events

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// TestRecentIsTheLastInOrder: events without -f are the last historySize
// published, oldest first, before the history fills, once it is full and
// after it has gone round several times; a user sees only theirs.
func TestRecentIsTheLastInOrder(t *testing.T) {
	for _, n := range []int{0, 1, historySize - 1, historySize, historySize + 1, 3*historySize + 17} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			b := New(time.Now)
			for i := range n {
				b.Publish(ipc.Event{Type: "e", Message: fmt.Sprint(i), UID: 1000 + i%2})
			}
			first := max(0, n-historySize)
			var want []string
			for i := first; i < n; i++ {
				want = append(want, fmt.Sprint(i))
			}
			if got := messages(t, b, ipc.Caller{UID: 0}); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("root sees %v\nwant %v", got, want)
			}
			var mine []string
			for i := first; i < n; i++ {
				if i%2 == 1 {
					mine = append(mine, fmt.Sprint(i))
				}
			}
			if got := messages(t, b, ipc.Caller{UID: 1001}); fmt.Sprint(got) != fmt.Sprint(mine) {
				t.Errorf("uid 1001 sees %v\nwant %v", got, mine)
			}
		})
	}
}

func messages(t *testing.T, b *Bus, c ipc.Caller) []string {
	t.Helper()
	ch, err := b.Subscribe(context.Background(), c, ipc.EventOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev := range ch {
		got = append(got, ev.Message)
	}
	return got
}

// TestFollowSeesWhatComesAfter: a follower gets the events published after
// it subscribed that its caller may see, stamped, until its context ends.
func TestFollowSeesWhatComesAfter(t *testing.T) {
	b := New(func() time.Time { return time.Unix(100, 0) })
	b.Publish(ipc.Event{Type: "before", UID: 1000})
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Subscribe(ctx, ipc.Caller{UID: 1000}, ipc.EventOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	b.Publish(ipc.Event{Type: "other's", UID: 1001})
	b.Publish(ipc.Event{Type: "mine", UID: 1000})
	ev := <-ch
	if ev.Type != "mine" || !ev.Time.Equal(time.Unix(100, 0)) {
		t.Errorf("followed %+v, want the caller's event after the subscription, stamped", ev)
	}
	cancel()
	for range ch {
	}
}

// TestAFollowerBehindIsToldWhatItMissed: a follower that reads nothing
// while events are published keeps the first ones its queue has room for;
// the ones that did not fit are counted exactly by missed events in their
// place, and the stream goes on with the events published after. Its
// stream never ends for being behind.
func TestAFollowerBehindIsToldWhatItMissed(t *testing.T) {
	b := New(time.Now)
	b.behind = 8
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := b.Subscribe(ctx, ipc.Caller{UID: 1000}, ipc.EventOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	const burst = 50
	for i := range burst {
		b.Publish(ipc.Event{Type: "e", Message: fmt.Sprint(i), UID: 1000})
		b.Publish(ipc.Event{Type: "other's", UID: 1001})
	}
	// Each event is the next one or, after a missed event, the one
	// its count says.
	next, kept, gaps := 0, 0, 0
	for next < burst {
		ev := <-ch
		switch ev.Type {
		case ipc.EventMissed:
			var d struct{ Missed int }
			if err := json.Unmarshal(ev.Data, &d); err != nil || d.Missed <= 0 || ev.Message == "" {
				t.Fatalf("missed event %+v: data %s (%v), want a count and a message", ev, ev.Data, err)
			}
			next += d.Missed
			gaps++
		case "e":
			if ev.Message != fmt.Sprint(next) {
				t.Fatalf("got event %s, want %d", ev.Message, next)
			}
			next++
			kept++
		default:
			t.Fatalf("got %+v: another user's event", ev)
		}
	}
	if next != burst || gaps == 0 || kept < b.behind {
		t.Fatalf("counted %d of %d events, %d kept in %d gaps: want all counted, the first %d kept, some missed", next, burst, kept, gaps, b.behind)
	}
	b.Publish(ipc.Event{Type: "after", UID: 1000})
	if ev := <-ch; ev.Type != "after" {
		t.Errorf("after the burst got %+v, want the next event", ev)
	}
}

// TestAFollowerBehindByLessMissesNothing: a follower that reads nothing
// while fewer events than its queue holds are published gets them all, in
// order, with no missed event.
func TestAFollowerBehindByLessMissesNothing(t *testing.T) {
	b := New(time.Now)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := b.Subscribe(ctx, ipc.Caller{UID: 0}, ipc.EventOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	n := maxBehind - 1
	for i := range n {
		b.Publish(ipc.Event{Type: "e", Message: fmt.Sprint(i), UID: 1000 + i%3})
	}
	for i := range n {
		if ev := <-ch; ev.Message != fmt.Sprint(i) {
			t.Fatalf("event %d: got %+v", i, ev)
		}
	}
	select {
	case ev := <-ch:
		t.Errorf("got %+v after the last", ev)
	default:
	}
}

// TestCloseHandsOnWhatIsQueued: the daemon's shutdown ends each follower's
// stream after the events published before it, and refuses new followers.
func TestCloseHandsOnWhatIsQueued(t *testing.T) {
	b := New(time.Now)
	ch, err := b.Subscribe(context.Background(), ipc.Caller{UID: 0}, ipc.EventOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		b.Publish(ipc.Event{Type: "e", Message: fmt.Sprint(i)})
	}
	b.Close()
	var got []string
	for ev := range ch {
		got = append(got, ev.Message)
	}
	if fmt.Sprint(got) != "[0 1 2 3 4]" {
		t.Errorf("got %v before the end, want the 5 events published before Close", got)
	}
	if _, err := b.Subscribe(context.Background(), ipc.Caller{UID: 0}, ipc.EventOptions{Follow: true}); err == nil {
		t.Error("a follower after Close was let in")
	}
}

// TestAFollowerGoneLeavesNothing: once a follower's context ends, its
// stream closes, even while events wait for it, and the bus forgets it.
func TestAFollowerGoneLeavesNothing(t *testing.T) {
	b := New(time.Now)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Subscribe(ctx, ipc.Caller{UID: 0}, ipc.EventOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		b.Publish(ipc.Event{Type: "e"})
	}
	cancel()
	deadline := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-deadline:
			t.Fatal("the stream of a follower gone did not close")
		}
	}
	b.mu.Lock()
	n := len(b.subs)
	b.mu.Unlock()
	if n != 0 {
		t.Errorf("the bus still has %d followers", n)
	}
	b.Publish(ipc.Event{Type: "e"}) // publishing to nobody
}
