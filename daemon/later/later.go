// Package later runs work that can wait until the daemon is quiet: the
// files a session's end writes into, made ready after its start, not
// while a thousand more starts wait behind them; an ended session's empty
// cgroup, removed after a thousand ends, not among them.
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
	// closing is closed by Close: the wait for quiet ends at once.
	closing chan struct{}

	mu      sync.Mutex
	jobs    []job
	last    time.Time
	running bool
	closed  bool
	wg      sync.WaitGroup
}

// job is work queued; tidy: Close runs it if it has not run.
type job struct {
	f    func()
	tidy bool
}

// New returns a queue that waits quiet after the last work queued.
func New(quiet time.Duration) *Queue { return &Queue{quiet: quiet, closing: make(chan struct{})} }

// Do queues f. After Close, f is dropped.
func (q *Queue) Do(f func()) { q.queue(job{f: f}) }

// Tidy queues f as Do does, but f is not dropped: Close runs it if it has
// not run yet, and after Close, Tidy runs it at once. It is for clearing
// up what would otherwise be left behind.
func (q *Queue) Tidy(f func()) {
	if !q.queue(job{f: f, tidy: true}) {
		f()
	}
}

// queue adds j; false if the queue is closed.
func (q *Queue) queue(j job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.jobs = append(q.jobs, j)
	q.last = time.Now()
	if !q.running {
		q.running = true
		q.wg.Add(1)
		go q.run()
	}
	return true
}

func (q *Queue) run() {
	defer q.wg.Done()
	var quiet *time.Timer
	defer func() {
		if quiet != nil {
			quiet.Stop()
		}
	}()
	for {
		q.mu.Lock()
		if len(q.jobs) == 0 {
			q.jobs = nil
		}
		if q.closed || len(q.jobs) == 0 {
			// Close takes what is left.
			q.running = false
			q.mu.Unlock()
			return
		}
		if wait := q.quiet - time.Since(q.last); wait > 0 {
			q.mu.Unlock()
			if quiet == nil {
				quiet = time.NewTimer(wait)
			} else {
				quiet.Reset(wait)
			}
			select {
			case <-quiet.C:
			case <-q.closing:
			}
			continue
		}
		j := q.jobs[0]
		q.jobs[0] = job{}
		q.jobs = q.jobs[1:]
		q.mu.Unlock()
		j.f()
	}
}

// Close waits for the work running (not for the quiet the queue waits
// for), runs the tidying not begun (Tidy) and drops the rest.
func (q *Queue) Close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.closing)
	}
	q.mu.Unlock()
	q.wg.Wait()
	q.mu.Lock()
	left := q.jobs
	q.jobs = nil
	q.mu.Unlock()
	for _, j := range left {
		if j.tidy {
			j.f()
		}
	}
}
