package ui

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sessiond/sessiond/ipc"
)

// Main is sessionctl-ui: the dashboard of `sessionctl ui`, which checks
// that it runs on a terminal and runs it as
//
//	sessionctl-ui --socket PATH --sessionctl PATH [--socket-given] [--no-color] [--host URL]
//
// by the helper binary, or in sessionctl's own process when it has none
// beside it. --sessionctl is the binary whose commands the dashboard shows
// and runs (stop, attach, ...); --socket-given says that the user named
// the socket, so that those commands name it too. It returns the exit
// status.
func Main(args []string) int {
	fs := flag.NewFlagSet("sessionctl-ui", flag.ContinueOnError)
	socket := fs.String("socket", "", "the daemon's socket")
	sessionctl := fs.String("sessionctl", "", "the sessionctl binary")
	socketGiven := fs.Bool("socket-given", false, "the user named the socket")
	noColor := fs.Bool("no-color", false, "no colour")
	host := fs.String("host", "", "another host's daemon (ssh://...)")
	var contexts []string
	fs.Func("context", "NAME=URL: one of several hosts (URL \"\" for this one); repeated", func(v string) error {
		contexts = append(contexts, v)
		return nil
	})
	if err := fs.Parse(args); err != nil || *socket == "" || *sessionctl == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "sessionctl-ui is run by `sessionctl ui`; run that instead")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := &ipc.Client{Socket: *socket}
	if *host != "" {
		r, err := ipc.ParseHost(*host)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sessionctl ui:", err)
			return 2
		}
		client.Socket, client.Dial = r.URL, r.Dial
	}
	opt := Options{
		Client:      client,
		Socket:      client.Socket,
		SocketGiven: *socketGiven,
		Host:        *host,
		Executable:  *sessionctl,
		NoColor:     *noColor,
	}
	if len(contexts) > 0 {
		var hosts []Host
		for _, c := range contexts {
			name, url, _ := strings.Cut(c, "=")
			hc := &ipc.Client{Socket: *socket}
			if url != "" {
				r, err := ipc.ParseHost(url)
				if err != nil {
					fmt.Fprintln(os.Stderr, "sessionctl ui:", err)
					return 2
				}
				hc.Socket, hc.Dial = r.URL, r.Dial
			}
			hosts = append(hosts, Host{Name: name, Client: hc})
		}
		mc, states, err := serveHosts(ctx, hosts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sessionctl ui:", err)
			return 1
		}
		opt.Client, opt.Socket, opt.HostStates, opt.Host = mc, "several hosts", states, ""
	}
	err := Run(ctx, opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessionctl ui:", err)
		return 1
	}
	return 0
}
