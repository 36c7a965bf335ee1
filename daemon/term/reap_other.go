//go:build !linux

package term

import "os"

// reapLater collects the holder's exit status when it ends.
func reapLater(p *os.Process) {
	go func() { _, _ = p.Wait() }()
}
