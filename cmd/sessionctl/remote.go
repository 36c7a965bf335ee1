package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/ipc/escape"
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
	if cmd.Name() == "dial-stdio" || cmd.Parent() != nil && cmd.Parent().Name() == "context" {
		return nil
	}
	host, err := a.hostOf(cmd)
	if host == "" || err != nil {
		return err
	}
	r, err := ipc.ParseHost(host)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	remote = r
	a.client.Socket, a.client.Dial = r.URL, r.Dial
	return nil
}

// hostOf is the host this invocation talks to ("" for this one): --host,
// else --context's, else $SESSIOND_HOST, else $SESSIOND_CONTEXT's or the
// current context's. A --socket given is this host's daemon.
func (a *app) hostOf(cmd *cobra.Command) (string, error) {
	if strings.Contains(a.context, ",") {
		if cmd.Name() != "ps" && cmd.Name() != "events" && cmd.Name() != "ui" {
			return "", usageErr("--context %s: a list of contexts is for ps and events (one view of several hosts); give one", a.context)
		}
		return "", nil // ps asks each itself
	}
	switch {
	case a.host != "":
		if a.context != "" {
			return "", usageErr("--host and --context: choose one")
		}
		return a.host, nil
	case cmd.Flags().Changed("socket") && a.context == "":
		return "", nil
	case a.context == "" && os.Getenv(HostEnv) != "":
		return os.Getenv(HostEnv), nil
	case a.context == "" && os.Getenv(ContextEnv) == "" && os.Getenv(config.EnvSocket) != "":
		// SESSIOND_SOCKET names this host's daemon: what a session's
		// own commands (its agent's hooks, report, mcp) are given, which
		// the current context must not send elsewhere.
		return "", nil
	}
	cf, _, err := loadContexts()
	if err != nil {
		return "", err
	}
	return cf.host(a.contextName(cf))
}

// hostResult is what one host of a listing answered.
type hostResult struct {
	name string
	rows []ipc.SessionRow
	recs []ipc.Session
	err  error
}

// psHosts is ps over several contexts: each asked at once, each within
// timeout; a host that does not answer is one line on stderr (and exit 1),
// the others' sessions are listed all the same, with a HOST column.
func (a *app) psHosts(ctx context.Context, opt ipc.ListOptions, match func(ipc.SessionRow) bool, all bool, timeout time.Duration,
	quiet bool, tmpl *template.Template, table, noTrunc bool) error {
	hosts, err := a.contextHosts(a.context, all)
	if err != nil {
		return err
	}
	results := make([]hostResult, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := hostResult{name: h[0]}
			c := &ipc.Client{Socket: a.socket}
			if h[1] != "" {
				r, err := ipc.ParseHost(h[1])
				if err != nil {
					res.err = err
					results[i] = res
					return
				}
				c.Socket, c.Dial = r.URL, r.Dial
			}
			defer c.Close()
			hctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if a.json {
				res.recs, res.err = c.Sessions(hctx, opt)
			} else {
				res.rows, res.err = c.SessionRows(hctx, opt)
			}
			if hctx.Err() != nil && res.err != nil {
				res.err = fmt.Errorf("no answer within %s (--host-timeout)", timeout)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	failed := 0
	var rows []ipc.SessionRow
	// Not nil: a listing of several hosts has the HOST column, with no
	// row as with many.
	names := []string{}
	recs := []ipc.Session{}
	for _, res := range results {
		if res.err != nil {
			failed++
			var un *ipc.UnreachableError
			why := res.err.Error()
			if errors.As(res.err, &un) {
				why = un.Err.Error()
			}
			fmt.Fprintf(a.errOut, "sessionctl: %s: %s\n", res.name, ipc.TerminalLine(why))
			continue
		}
		for _, s := range res.recs {
			if match(s.Row()) {
				s.Host = res.name
				recs = append(recs, s)
			}
		}
		for _, r := range res.rows {
			if match(r) {
				rows, names = append(rows, r), append(names, res.name)
			}
		}
	}
	switch {
	case a.json:
		if err := a.printJSON(recs); err != nil {
			return err
		}
	case quiet:
		for i, r := range rows {
			fmt.Fprintf(a.out, "%s\t%s\n", names[i], r.ID)
		}
	case tmpl == nil:
		a.printTableOf(rows, names, time.Now(), noTrunc)
	default:
		if err := a.printFormatOf(tmpl, table, rows, names, time.Now(), noTrunc); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &exitError{exitFailed, errQuiet}
	}
	return nil
}

// errQuiet is an error already told: the exit code says the rest.
var errQuiet = errors.New("")

// clientOf is the client of a context's host ("" this host's).
func (a *app) clientOf(host string) (*ipc.Client, error) {
	c := &ipc.Client{Socket: a.socket}
	if host != "" {
		r, err := ipc.ParseHost(host)
		if err != nil {
			return nil, err
		}
		c.Socket, c.Dial = r.URL, r.Dial
	}
	return c, nil
}

// eventsHosts follows several hosts' events together, each line with its
// host first (--json: a "host" member); a host that cannot be reached, or
// whose stream ends, is one line on stderr, and the others go on.
func (a *app) eventsHosts(ctx context.Context, follow, all bool) error {
	hosts, err := a.contextHosts(a.context, all)
	if err != nil {
		return err
	}
	type hostEvent struct {
		Host string `json:"host"`
		ipc.Event
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := false
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail := func(err error) {
				mu.Lock()
				defer mu.Unlock()
				failed = true
				var un *ipc.UnreachableError
				if errors.As(err, &un) {
					err = un.Err
				}
				fmt.Fprintf(a.errOut, "sessionctl: %s: %s\n", h[0], ipc.TerminalLine(err.Error()))
			}
			c, err := a.clientOf(h[1])
			if err != nil {
				fail(err)
				return
			}
			defer c.Close()
			w, err := c.Events(ctx, follow)
			if err != nil {
				fail(err)
				return
			}
			defer w.Close()
			for {
				ev, err := w.Next()
				if err != nil {
					if follow && ctx.Err() == nil {
						fail(errors.New("its event stream ended"))
					}
					return
				}
				mu.Lock()
				if a.json {
					b, _ := json.Marshal(hostEvent{Host: h[0], Event: ev})
					b = escape.JSONC1(b)
					fmt.Fprintf(a.out, "%s\n", b)
				} else {
					fmt.Fprintf(a.out, "%s  %s  %-10s %s  %s\n", ipc.TerminalLine(h[0]), ev.Time.Local().Format("15:04:05.000"), ev.Type, ev.SessionID, ipc.TerminalLine(ev.Message))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed {
		return &exitError{exitFailed, errQuiet}
	}
	return nil
}
