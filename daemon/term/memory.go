package term

import (
	"runtime"
	"runtime/debug"

	"github.com/sessiond/sessiond/daemon/memory/exepages"
)

// releaseMemory gives back what a quiet holder does not need: free heap
// pages, and the pages of the executable's code and read-only data that
// start-up touched. The sessiond binary carries the whole daemon (zap,
// cobra, the HTTP server); their package initialisation and the flag
// parsing fault in megabytes of it, which a holder never runs again
// (package exepages).
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
	_, _ = exepages.Drop()
}
