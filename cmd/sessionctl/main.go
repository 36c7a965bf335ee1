// Command sessionctl controls sessiond over its Unix socket.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// Most commands live for milliseconds and decode one answer: a
		// collection in the middle of decoding 1000 sessions costs more
		// than the memory it would save. The long-running ones (logs -f,
		// events -f) keep small heaps either way; ui and mcp are binaries
		// of their own (helper.go).
		debug.SetGCPercent(400)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
