package logkeep

import (
	"sync"
	"time"
)

// maxBatch bounds the paths of one request: a thousand paths of a state
// dir are well within a message (maxMessage).
const maxBatch = 256

// batchWindow is how long a batch on its way holds back the next: the
// next goes when the one before is answered or batchWindow after it went,
// whichever comes first, so that a log slow to take its rest (up to
// drainMax) holds up the releases after it by no more than that.
const batchWindow = 2 * time.Millisecond

// batcher gathers the paths asked for while a request is on its way, for
// the next one (group commit): a burst of ends, a stop --all of a
// thousand, makes a few dozen requests rather than a thousand. Each
// path's caller goes on as soon as its own path is answered.
type batcher struct {
	mu      sync.Mutex
	queue   []pending
	sending bool
	// window is batchWindow, unless a test sets it.
	window time.Duration
}

type pending struct {
	path string
	done chan struct{}
}

// sendFunc sends paths and calls answered with the index of each path
// as its answer comes; those it has not named when it returns are taken
// as answered then.
type sendFunc func(paths []string, answered func(i int))

// do returns once path has been answered, in a batch that send sent.
func (b *batcher) do(path string, send sendFunc) {
	p := pending{path: path, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	if !b.sending {
		b.sending = true
		go b.run(send)
	}
	b.mu.Unlock()
	<-p.done
}

// run sends the queue a batch at a time until it is empty.
func (b *batcher) run(send sendFunc) {
	wait := b.window
	if wait == 0 {
		wait = batchWindow
	}
	var window *time.Timer
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.queue, b.sending = nil, false
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), maxBatch)
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.mu.Unlock()
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			sendBatch(batch, send)
		}()
		if window == nil {
			window = time.NewTimer(wait)
		} else {
			window.Reset(wait)
		}
		select {
		case <-sent:
		case <-window.C:
		}
	}
}

// sendBatch sends batch and lets each of its callers go on as its path is
// answered.
func sendBatch(batch []pending, send sendFunc) {
	paths := make([]string, len(batch))
	for i, p := range batch {
		paths[i] = p.path
	}
	answered := make([]bool, len(batch))
	var mu sync.Mutex
	answer := func(i int) {
		mu.Lock()
		defer mu.Unlock()
		if !answered[i] {
			answered[i] = true
			close(batch[i].done)
		}
	}
	send(paths, answer)
	for i := range batch {
		answer(i)
	}
}
