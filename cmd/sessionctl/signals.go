package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// catchLate is how long a command runs before SIGINT and SIGTERM cancel
// its context rather than end the process. Catching a signal in Go costs
// a thread that waits for it, started, woken and wound down with the
// process: 0.3-0.4 ms of a `sessionctl ps` of 2-3 ms (bench/README.md,
// issue 31). Most commands answer well within catchLate and, interrupted
// before it, have nothing to undo: the signal's default action ends them.
// Those that wait (start --wait, stop, logs -f, events -f) catch from then
// on, and say what goes on without them.
const catchLate = 50 * time.Millisecond

// catchNow are the commands that catch from their first instant: they
// hold the terminal (attach puts it in raw mode and must put it back) or
// a connection someone else drives.
var catchNow = map[string]bool{"attach": true, "dial-stdio": true, "ui": true, "mcp": true}

// interruptible is a context that the first SIGINT or SIGTERM after
// delay cancels, as signal.NotifyContext's would; stop releases it.
type interruptible struct {
	context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	timer   *time.Timer
	ch      chan os.Signal
	stopped bool
}

func interruptibleAfter(delay time.Duration) *interruptible {
	ctx, cancel := context.WithCancel(context.Background())
	in := &interruptible{Context: ctx, cancel: cancel}
	if delay <= 0 {
		in.catch()
	} else {
		in.timer = time.AfterFunc(delay, in.catch)
	}
	return in
}

func (in *interruptible) catch() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stopped {
		return
	}
	in.ch = make(chan os.Signal, 1)
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
	ch, done := in.ch, in.Done()
	go func() {
		select {
		case <-ch:
			in.cancel()
		case <-done:
		}
	}()
}

// stop restores the signals' default actions and cancels the context.
func (in *interruptible) stop() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stopped = true
	if in.timer != nil {
		in.timer.Stop()
	}
	if in.ch != nil {
		signal.Stop(in.ch)
	}
	in.cancel()
}
