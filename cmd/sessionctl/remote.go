package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/ipc"
)

// HostEnv names the environment variable that gives --host.
const HostEnv = "SESSIOND_HOST"

// remote is the host this invocation talks to; nil for this one. DIR
// arguments are that host's directories then, taken as they are.
var remote *ipc.Remote

// dialStdioCmd is `sessionctl dial-stdio`: standard input and output
// joined to the daemon's socket, for a sessionctl on another host that
// reaches this one through SSH (--host ssh://).
func (a *app) dialStdioCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dial-stdio",
		Short: "Join standard input and output to the daemon's socket (what --host ssh:// runs on the other host)",
		Long: `Join standard input and output to the daemon's socket: what a sessionctl
on another host runs here through SSH for --host ssh://USER@THIS-HOST (as
docker system dial-stdio). The first line written says whether the socket
answered; then the bytes go both ways until either side closes.`,
		Args:   cobra.NoArgs,
		Hidden: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return dialStdio(cmd.Context(), a.socket, os.Stdin, os.Stdout)
		},
	}
}

func dialStdio(ctx context.Context, socket string, in io.Reader, out io.Writer) error {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := d.DialContext(dctx, "unix", socket)
	cancel()
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		why := fmt.Errorf("sessiond is not running on this host (nothing answers on %s: %v); start it with `sessiond start` or `sessiond run`", socket, err)
		_, _ = io.WriteString(out, ipc.DialStdioBanner(why))
		return &exitError{exitUnreachable, why}
	}
	defer conn.Close()
	if _, err := io.WriteString(out, ipc.DialStdioBanner(nil)); err != nil {
		return err
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_, _ = io.Copy(conn, in)
		if uc, ok := conn.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
	}()
	_, err = io.Copy(out, conn)
	return err
}

// remoteDir is a DIR argument for another host: an absolute path, taken
// as it is (it is that host's).
func remoteDir(arg string) (string, error) {
	if !filepath.IsAbs(arg) {
		return "", &exitError{exitUsage, fmt.Errorf("directory %q: on %s give an absolute path (a directory of that host)", arg, remote.URL)}
	}
	return filepath.Clean(arg), nil
}

// useHost points the client at --host (or $SESSIOND_HOST): a remote
// host's daemon through SSH. dial-stdio itself always serves this host's.
func (a *app) useHost(cmd *cobra.Command) error {
	host := a.host
	if host == "" && !cmd.Flags().Changed("socket") {
		host = os.Getenv(HostEnv)
	}
	if host == "" || cmd.Name() == "dial-stdio" {
		return nil
	}
	r, err := ipc.ParseHost(host)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	remote = r
	a.client.Socket, a.client.Dial = r.URL, r.Dial
	return nil
}
