package proc

import (
	"os"
	"os/signal"
	"syscall"
)

// DefaultSignalsForChildren makes SIGHUP and SIGINT, if this process was
// started ignoring them, caught and dropped instead: it goes on ignoring
// them, and the processes it starts from now on begin with them at their
// default, as with every other signal. A Go program keeps an inherited
// SIG_IGN of these two (of no other), and exec passes it on: under `nohup
// sessiond run`, or `sessiond run &` from a script (a background job
// ignores SIGINT), a session's command could not be stopped by SIGHUP, the
// stop signal of a terminal, nor SIGINT.
func DefaultSignalsForChildren() {
	var ignored []os.Signal
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(sig) {
			ignored = append(ignored, sig)
		}
	}
	if len(ignored) > 0 {
		// Never read: a signal that finds it full is dropped.
		signal.Notify(make(chan os.Signal, 1), ignored...)
	}
}
