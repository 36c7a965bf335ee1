// Command sessiond-holder holds one terminal session's pseudo-terminal: the
// daemon starts one per terminal session, hands it the session's spec on
// stdin and reads one ready line on stdout (package term). It is the holder
// mode of sessiond (`sessiond holder`) with nothing else of sessiond linked
// in: a holder lives as long as its session, one per terminal, and a
// smaller executable keeps less of itself in memory. The daemon runs it
// when it is installed beside sessiond or in ../libexec/sessiond, and its
// own holder mode otherwise.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sessiond/sessiond/daemon/term"
)

func main() {
	if len(os.Args) > 2 || (len(os.Args) == 2 && os.Args[1] != "holder") {
		fmt.Fprintln(os.Stderr, "sessiond-holder: the daemon starts it for a terminal session, with no arguments; see `sessionctl start --tty`")
		os.Exit(2)
	}
	if err := term.RunHolder(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sessiond-holder:", err)
		os.Exit(1)
	}
}
