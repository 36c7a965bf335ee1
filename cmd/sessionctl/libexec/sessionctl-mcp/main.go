// Command sessionctl-mcp is the MCP server of `sessionctl mcp`, which execs
// it as
//
//	sessionctl-mcp --socket PATH --version V
//
// It serves the session named by SESSIOND_SESSION_ID on stdin/stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sessiond/sessiond/cmd/sessionctl/mcp"
	"github.com/sessiond/sessiond/ipc"
)

func main() {
	fs := flag.NewFlagSet("sessionctl-mcp", flag.ContinueOnError)
	socket := fs.String("socket", "", "the daemon's socket")
	version := fs.String("version", "dev", "the version sessionctl reports")
	if err := fs.Parse(os.Args[1:]); err != nil || *socket == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "sessionctl-mcp is run by `sessionctl mcp`; run that instead")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := mcp.ServeStdio(ctx, mcp.API(&ipc.Client{Socket: *socket}), mcp.Options{
		SessionID: os.Getenv("SESSIOND_SESSION_ID"), Version: *version, Logger: log,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessionctl mcp:", err)
		stop()
		os.Exit(1)
	}
}
