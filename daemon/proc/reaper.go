package proc

import (
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

var reaperOnce sync.Once

// reapWaits counts the reaper's waits for a session child (for tests).
var reapWaits atomic.Uint64

// startReaper starts the goroutine that reaps children on SIGCHLD. It lives
// as long as the process, as children do.
func startReaper() {
	reaperOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGCHLD)
		go reapLoop(ch)
	})
}

// reapLoop reaps on every SIGCHLD.
func reapLoop(ch <-chan os.Signal) {
	for range ch {
		reap()
	}
}

// reap collects every exited session child and every orphan zombie that
// came back to the daemon, leaving helper commands to os/exec.
func reap() {
	helpers.mu.Lock()
	defer helpers.mu.Unlock()
	// The exited children first, one wait each: at a stop of thousands of
	// sessions, a look at every child per SIGCHLD cost a wait per child
	// still running, for every end.
	exited, clean := reapExited()
	if clean {
		for _, c := range exited {
			c.finish()
		}
		return
	}
	children.mu.Lock()
	for pid, c := range children.m {
		var ws unix.WaitStatus
		reapWaits.Add(1)
		wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if wpid == pid || err == unix.ECHILD {
			delete(children.m, pid)
			if err == nil {
				c.exit = exitOf(ws)
			} else {
				c.exit = Exit{Code: -1, Signal: "unknown"}
			}
			exited = append(exited, c)
		}
	}
	children.mu.Unlock()
	for _, c := range exited {
		c.finish()
	}
	reapOrphans()
}
