package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"text/template"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/ipc"
)

// versionInfo is what sessionctl version shows, and what --format's
// template sees.
type versionInfo struct {
	// Client is sessionctl's version.
	Client string `json:"client"`
	// Socket is the socket sessionctl uses (--socket, SESSIOND_SOCKET,
	// else the user's, else the system's).
	Socket string `json:"socket,omitempty"`
	// Host is the other host's URL sessionctl talks to through SSH
	// (--host, --context), in place of a socket of this one.
	Host string `json:"host,omitempty"`
	// Daemon is the daemon's version information; nil when it does not
	// answer.
	Daemon *ipc.Version `json:"daemon,omitempty"`
}

func (a *app) versionCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version [--format TEMPLATE]",
		Short: "Print the client's version, the socket it uses, and the daemon's version",
		Long: `Print sessionctl's version, the socket it uses, and the version, pid, mode
and state dir of the daemon there. Exit 3 when no daemon answers (the first
two are printed all the same).

--format takes a Go template over .Client, .Socket and .Daemon (.Version
.API .PID .Socket .Mode .StateDir); a template that does not use .Daemon
needs no daemon. For the HTTP API with curl, whoever you are:

  curl --unix-socket "$(sessionctl version --format '{{.Socket}}')" http://sessiond/v1/sessions`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var tmpl *template.Template
			if format != "" {
				var err error
				if tmpl, err = template.New("version").Option("missingkey=error").Parse(unescapeTabs(format) + "\n"); err != nil {
					return usageErr("--format: %v", err)
				}
				// A field that does not exist is a usage error, found
				// before any request.
				if err := tmpl.Execute(io.Discard, versionInfo{Daemon: &ipc.Version{}}); err != nil {
					return usageErr("--format: %v", err)
				}
			}
			info := versionInfo{Client: version, Socket: a.socket}
			if remote != nil {
				info.Socket, info.Host = "", remote.URL
			}
			v, err := a.client.Version(cmd.Context())
			if err == nil {
				info.Daemon = &v
			}
			switch {
			case tmpl != nil:
				var b bytes.Buffer
				if terr := tmpl.Execute(&b, info); terr != nil {
					// It needs the daemon, which did not answer.
					return err
				}
				_, _ = a.out.Write(b.Bytes())
				var un *ipc.UnreachableError
				if errors.As(err, &un) {
					// The template did not need the daemon.
					return nil
				}
				return err
			case a.json:
				_ = a.printJSON(info)
				return err
			}
			fmt.Fprintf(a.out, "sessionctl %s\n", version)
			if info.Host != "" {
				fmt.Fprintf(a.out, "host       %s\n", info.Host)
			} else {
				fmt.Fprintf(a.out, "socket     %s\n", info.Socket)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.out, "sessiond   %s (api %s, pid %d", v.Version, v.API, v.PID)
			if v.Mode != "" {
				fmt.Fprintf(a.out, ", %s mode", v.Mode)
			}
			if v.StateDir != "" {
				fmt.Fprintf(a.out, ", state dir %s", v.StateDir)
			}
			fmt.Fprintln(a.out, ")")
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "Go template over .Client, .Socket (this host's), .Host (another's) and .Daemon, e.g. '{{.Socket}}'")
	return cmd
}
