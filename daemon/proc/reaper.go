package proc

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

var reaperOnce sync.Once

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
	children.mu.Lock()
	var exited []*Child
	for pid, c := range children.m {
		var ws unix.WaitStatus
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
