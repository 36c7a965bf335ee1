package mcp

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sessiond/sessiond/ipc"
)

// Main is sessionctl-mcp: the MCP server of `sessionctl mcp`, for the
// session named by SESSIOND_SESSION_ID, on stdin/stdout, run as
//
//	sessionctl-mcp --socket PATH --version V
//
// by the helper binary, or in sessionctl's own process when it has none
// beside it. It returns the exit status.
func Main(args []string) int {
	fs := flag.NewFlagSet("sessionctl-mcp", flag.ContinueOnError)
	socket := fs.String("socket", "", "the daemon's socket")
	version := fs.String("version", "dev", "the version sessionctl reports")
	if err := fs.Parse(args); err != nil || *socket == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "sessionctl-mcp is run by `sessionctl mcp`; run that instead")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := ServeStdio(ctx, API(&ipc.Client{Socket: *socket}), Options{
		SessionID: os.Getenv("SESSIOND_SESSION_ID"), Version: *version, Logger: log,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessionctl mcp:", err)
		return 1
	}
	return 0
}
