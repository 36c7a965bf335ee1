// Command sessiond-logkeeper is the daemon's log keeper, as `sessiond
// logkeeper` is, with nothing else of sessiond linked in: it carries every
// plain session's output from its pipe into its log (package logkeep), and
// a smaller executable keeps less of itself in memory meanwhile. The daemon
// starts it, as
//
//	sessiond-logkeeper --socket PATH
//
// when it is installed beside sessiond or in ../libexec/sessiond, and
// sessiond's own keeper mode otherwise.
package main

import (
	"fmt"
	"os"

	"github.com/sessiond/sessiond/daemon/logkeep"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "--socket" {
		fmt.Fprintln(os.Stderr, "sessiond-logkeeper: the daemon starts it, as sessiond-logkeeper --socket PATH; see sessiond run")
		os.Exit(2)
	}
	os.Exit(logkeep.Main("sessiond-logkeeper", os.Args[2]))
}
