package proc

import "sync"

// Watched returns a Child for a session process that is not the daemon's
// own child, such as the command a terminal holder runs: someone else learns
// how it ends and says so through report, which closes Done. Only the first
// report counts.
func Watched(p Process) (c *Child, report func(Exit)) {
	c = &Child{PID: p.PID, StartTime: p.Start, Ino: p.Ino, done: make(chan struct{})}
	var once sync.Once
	return c, func(e Exit) {
		once.Do(func() {
			c.exit = e
			c.finish()
		})
	}
}
