// Command sessionctl-ui is the dashboard of `sessionctl ui`, which checks
// that it runs on a terminal and execs it as
//
//	sessionctl-ui --socket PATH --sessionctl PATH [--socket-given] [--no-color]
//
// --sessionctl is the binary whose commands the dashboard shows and runs
// (stop, attach, ...); --socket-given says that the user named the socket,
// so that those commands name it too.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sessiond/sessiond/cmd/sessionctl/ui"
	"github.com/sessiond/sessiond/ipc"
)

func main() {
	fs := flag.NewFlagSet("sessionctl-ui", flag.ContinueOnError)
	socket := fs.String("socket", "", "the daemon's socket")
	sessionctl := fs.String("sessionctl", "", "the sessionctl binary")
	socketGiven := fs.Bool("socket-given", false, "the user named the socket")
	noColor := fs.Bool("no-color", false, "no colour")
	if err := fs.Parse(os.Args[1:]); err != nil || *socket == "" || *sessionctl == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "sessionctl-ui is run by `sessionctl ui`; run that instead")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := ui.Run(ctx, ui.Options{
		Client:      &ipc.Client{Socket: *socket},
		Socket:      *socket,
		SocketGiven: *socketGiven,
		Executable:  *sessionctl,
		NoColor:     *noColor,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessionctl ui:", err)
		stop()
		os.Exit(1)
	}
}
