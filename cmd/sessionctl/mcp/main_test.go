package mcp

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain doubles as the MCP server of TestServeProcess: with
// SESSIOND_MCP_TEST_SERVER set, the test binary serves a fake daemon on its
// stdio, as `sessionctl mcp` does, and writes to SESSIOND_MCP_TEST_RECORD
// how its blocked checkpoint call ended.
func TestMain(m *testing.M) {
	if os.Getenv("SESSIOND_MCP_TEST_SERVER") != "" {
		os.Exit(testServer())
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func testServer() int {
	d := newFakeDaemon()
	d.extendCap = 30 * time.Minute
	d.blockCheckpoint = os.Getenv("SESSIOND_MCP_TEST_BLOCK") != ""
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		<-d.checkpointStart
		fmt.Fprintln(os.Stderr, "checkpoint started")
		err := <-d.checkpointDone
		os.WriteFile(os.Getenv("SESSIOND_MCP_TEST_RECORD"), []byte(fmt.Sprint(err)), 0o600)
	}()
	err := ServeStdio(context.Background(), d, Options{SessionID: os.Getenv("SESSIOND_SESSION_ID"), Version: "test"})
	if d.blockCheckpoint {
		// The call in flight ends after the connection: wait for its record.
		select {
		case <-recorded:
		case <-time.After(10 * time.Second):
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessionctl mcp:", err)
		return 1
	}
	return 0
}
