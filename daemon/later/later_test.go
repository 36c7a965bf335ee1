package later

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestDoWaitsForQuiet: work queued in a burst runs after it, in order,
// and not before the queue has been quiet.
func TestDoWaitsForQuiet(t *testing.T) {
	q := New(100 * time.Millisecond)
	t.Cleanup(q.Close)
	var mu sync.Mutex
	var got []int
	var ranAt []time.Time
	done := make(chan struct{})
	var lastQueued time.Time
	for i := range 10 {
		q.Do(func() {
			mu.Lock()
			got = append(got, i)
			ranAt = append(ranAt, time.Now())
			mu.Unlock()
			if i == 9 {
				close(done)
			}
		})
		lastQueued = time.Now()
		time.Sleep(20 * time.Millisecond) // a burst: never quiet long enough
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the work never ran")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, v := range got {
		if v != i {
			t.Fatalf("ran in the order %v", got)
		}
	}
	if first := ranAt[0]; first.Sub(lastQueued) < 100*time.Millisecond {
		t.Errorf("work ran %v after the last was queued, before the queue was quiet", first.Sub(lastQueued))
	}
}

// TestCloseDropsWhatWaits: Close waits for the work running and drops the
// rest; work queued after it never runs.
func TestCloseDropsWhatWaits(t *testing.T) {
	q := New(time.Millisecond)
	started, release := make(chan struct{}), make(chan struct{})
	ran := make(chan int, 10)
	q.Do(func() { close(started); <-release; ran <- 0 })
	q.Do(func() { ran <- 1 })
	<-started
	closed := make(chan struct{})
	go func() { q.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while work runs")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	q.Do(func() { ran <- 2 })
	time.Sleep(20 * time.Millisecond)
	close(ran)
	var got []int
	for v := range ran {
		got = append(got, v)
	}
	if len(got) != 1 || got[0] != 0 {
		t.Errorf("ran %v, want only the work that was running", got)
	}
}

// TestTidyRunsAtClose: tidying not yet begun runs at Close, the other
// work does not, and tidying queued after Close runs at once.
func TestTidyRunsAtClose(t *testing.T) {
	q := New(time.Hour)
	var got []string
	q.Do(func() { got = append(got, "do") })
	q.Tidy(func() { got = append(got, "tidy 1") })
	q.Tidy(func() { got = append(got, "tidy 2") })
	q.Close()
	if fmt.Sprint(got) != "[tidy 1 tidy 2]" {
		t.Fatalf("Close ran %q, want the tidying alone, in order", got)
	}
	q.Tidy(func() { got = append(got, "after") })
	q.Do(func() { got = append(got, "do after") })
	if fmt.Sprint(got) != "[tidy 1 tidy 2 after]" {
		t.Fatalf("after Close: %q", got)
	}
}

// TestCloseDoesNotWaitForQuiet: Close returns at once while the queue
// waits for quiet, its tidying run, though the quiet is an hour away.
func TestCloseDoesNotWaitForQuiet(t *testing.T) {
	q := New(time.Hour)
	tidied := make(chan struct{})
	q.Tidy(func() { close(tidied) })
	// The queue's goroutine is under way, waiting for the quiet.
	time.Sleep(50 * time.Millisecond)
	closed := make(chan struct{})
	go func() { q.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the queue's quiet")
	}
	select {
	case <-tidied:
	default:
		t.Fatal("Close did not run the tidying")
	}
}
