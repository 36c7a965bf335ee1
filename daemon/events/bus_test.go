package events

import (
	"context"
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
