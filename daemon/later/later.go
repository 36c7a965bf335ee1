// Package later runs work that can wait until the daemon is quiet: the
// files a session's end writes into, made ready after its start, not
// while a thousand more starts wait behind them.
package later

import (
	"sync"
	"time"
)

// Quiet is how long no work may have been queued before the queue runs
// any: a batch of starts queues as it goes and runs its work after.
const Quiet = 100 * time.Millisecond

// Queue runs the work queued on one goroutine, in order, each once Quiet
// has passed since the last was queued. The zero value is not usable:
// use New.
type Queue struct {
	quiet time.Duration

	mu      sync.Mutex
	jobs    []func()
	last    time.Time
	running bool
	closed  bool
	wg      sync.WaitGroup
}

// New returns a queue that waits quiet after the last work queued.
func New(quiet time.Duration) *Queue { return &Queue{quiet: quiet} }

// Do queues f. After Close, f is dropped.
func (q *Queue) Do(f func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.jobs = append(q.jobs, f)
	q.last = time.Now()
	if !q.running {
		q.running = true
		q.wg.Add(1)
		go q.run()
	}
}

func (q *Queue) run() {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		if q.closed || len(q.jobs) == 0 {
			q.running = false
			q.jobs = nil
			q.mu.Unlock()
			return
		}
		if wait := q.quiet - time.Since(q.last); wait > 0 {
			q.mu.Unlock()
			time.Sleep(wait)
			continue
		}
		f := q.jobs[0]
		q.jobs[0] = nil
		q.jobs = q.jobs[1:]
		q.mu.Unlock()
		f()
	}
}

// Close drops the work not begun and waits for the one running.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wg.Wait()
}
