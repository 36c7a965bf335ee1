// Command sessionctl-ui is the dashboard of `sessionctl ui`, which checks
// that it runs on a terminal and execs it as
//
//	sessionctl-ui --socket PATH --sessionctl PATH [--socket-given] [--no-color]
package main

import (
	"os"

	"github.com/sessiond/sessiond/cmd/sessionctl/ui"
)

func main() { os.Exit(ui.Main(os.Args[1:])) }
