package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func (in *interruptible) catching() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.ch != nil
}

// A command that ends before the delay never catches a signal; one that
// runs past it does, and SIGINT cancels its context.
func TestSignalsAreCaughtAfterTheDelay(t *testing.T) {
	quick := interruptibleAfter(30 * time.Millisecond)
	if quick.catching() {
		t.Fatal("catching before the delay")
	}
	quick.stop()
	time.Sleep(60 * time.Millisecond)
	if quick.catching() {
		t.Fatal("a command that ended before the delay catches signals")
	}

	slow := interruptibleAfter(30 * time.Millisecond)
	defer slow.stop()
	deadline := time.Now().Add(5 * time.Second)
	for !slow.catching() {
		if time.Now().After(deadline) {
			t.Fatal("not catching 5s after a delay of 30ms")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-slow.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT did not cancel the context")
	}

	now := interruptibleAfter(0)
	defer now.stop()
	if !now.catching() {
		t.Error("no delay: not catching at once")
	}
}
