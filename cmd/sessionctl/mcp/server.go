package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a server.
type Options struct {
	// SessionID is the session served (SESSIOND_SESSION_ID). Empty: the
	// server still runs, and every tool says the agent is not in a
	// session, so that a client configured once for every run of the
	// agent does not fail to start outside sessiond.
	SessionID string
	// Version is sessionctl's, told to the client.
	Version string
	// Logger, if set, logs the protocol's errors (to stderr, which MCP
	// clients keep as the server's log).
	Logger *slog.Logger
	// CallTimeout bounds each call to the daemon; zero is 30 s.
	CallTimeout time.Duration
}

// ErrNoSession is a tool called outside a sessiond session.
var ErrNoSession = errors.New("this agent is not running in a sessiond session (SESSIOND_SESSION_ID is not set)")

// instructions are told to the client at initialization; clients show them
// to the model with the tools.
const instructions = `sessiond supervises this session and stops it at its deadline. ` +
	`At the start, call handoff to learn what the previous session left and the next task. ` +
	`Call time_remaining to know how long you have; once it says warned, wrap up: commit or checkpoint your work and report what you did and what comes next. ` +
	`Use report as you go to record progress, next actions and blockers for the next session.`

// startupTimeout bounds the daemon call NewServer makes to learn whether
// the extend tool is offered.
const startupTimeout = 2 * time.Second

// NewServer builds the MCP server for the session. It asks the daemon once
// how much the agent may extend the deadline: with no allowance the extend
// tool is not offered (a daemon that does not answer leaves it offered,
// and the daemon still decides).
func NewServer(ctx context.Context, d Daemon, o Options) *sdk.Server {
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "sessiond", Title: "sessiond session", Version: version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       o.Logger,
		// No logging capability: the server sends the client no logs.
		Capabilities: &sdk.ServerCapabilities{},
	})
	t := &tools{d: d, o: o}
	t.add(s)
	extendCap, known := time.Duration(0), false
	if o.SessionID != "" {
		cctx, cancel := context.WithTimeout(ctx, startupTimeout)
		if r, err := d.Remaining(cctx, o.SessionID); err == nil {
			extendCap, known = r.ExtendCap, true
		}
		cancel()
	}
	if !known || extendCap > 0 {
		t.addExtend(s, extendCap, known)
	}
	return s
}

// Serve runs the server for the session on in and out (newline-delimited
// JSON-RPC) until the client closes its end or ctx ends. A client that
// goes away is a normal end (nil); a line that is not a JSON-RPC message is
// answered with a JSON-RPC error and the server goes on.
func Serve(ctx context.Context, d Daemon, o Options, in io.ReadCloser, out io.WriteCloser) error {
	s := NewServer(ctx, d, o)
	err := s.Run(ctx, guardedTransport{in: in, out: out, logger: o.Logger})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("mcp server: %w", err)
}

// ServeStdio is Serve on the process's stdin and stdout, as MCP clients run
// a stdio server.
func ServeStdio(ctx context.Context, d Daemon, o Options) error {
	return Serve(ctx, d, o, os.Stdin, nopCloser{os.Stdout})
}

// maxRequest bounds one request line: the largest tool input is a report
// of a few kilobytes.
const maxRequest = 1 << 20

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
