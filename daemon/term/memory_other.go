//go:build !linux

package term

import (
	"runtime"
	"runtime/debug"
)

// releaseMemory gives the free heap pages back to the system.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}
