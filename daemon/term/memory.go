package term

import (
	"runtime"
	"runtime/debug"
	"time"

	"github.com/sessiond/sessiond/daemon/memory/exepages"
)

// releaseMemory gives back what a quiet holder does not need: free heap
// pages, and the pages of the executable's code and read-only data that
// start-up touched. The sessiond binary carries the whole daemon (zap,
// cobra, the HTTP server); their package initialisation and the flag
// parsing fault in megabytes of it, which a holder never runs again
// (package exepages).
//
// The runtime's monitor is let run between the collections and the drop.
// A collection ends by asking the monitor to wake the scavenger, and the
// monitor of a process with nothing to do sleeps until its next timer, or
// a minute: it woke the scavenger a minute after the drop, and that
// faulted 180 KB of the executable back (three faults, each with the
// neighbours the kernel maps along), taking an idle holder over 3 MiB.
// Each of the holder's short sleeps here ends one of the monitor's, which
// then wakes the scavenger; the scavenger, finding nothing to return,
// parks before the drop. Only the monitor's periodic check of its own
// remains to fault, once (bench/README.md, the seventeenth pass).
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
	for range settleSleeps {
		time.Sleep(settleSleep)
	}
	_, _ = exepages.Drop()
}

// settleSleeps and settleSleep are the sleeps of releaseMemory that let
// the runtime's monitor wake the scavenger before the drop.
const (
	settleSleeps = 3
	settleSleep  = 5 * time.Millisecond
)
