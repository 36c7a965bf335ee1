//go:build !linux

package term

import (
	"os"
	"syscall"
)

// waitProcess waits for p to end and reaps it.
func waitProcess(p *os.Process) (syscall.WaitStatus, error) { return waitBlocking(p) }

// reapLater collects a holder's exit status when it ends.
func reapLater(p *os.Process) {
	go func() { _, _ = p.Wait() }()
}
