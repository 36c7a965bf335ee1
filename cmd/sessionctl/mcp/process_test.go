package mcp

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverProcess starts this test binary as an MCP server on its stdio, the
// way an agent starts `sessionctl mcp`, and connects the SDK's client to it.
func serverProcess(t *testing.T, env ...string) (*sdk.ClientSession, *exec.Cmd, string) {
	t.Helper()
	record := filepath.Join(t.TempDir(), "record")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"SESSIOND_MCP_TEST_SERVER=1", "SESSIOND_MCP_TEST_RECORD=" + record, "SESSIOND_SESSION_ID=" + testSession}, env...)...)
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, cmd, record
}

func TestServeProcess(t *testing.T) {
	cs, cmd, _ := serverProcess(t)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"checkpoint", "extend", "handoff", "report", "time_remaining"}) {
		t.Errorf("tools %q", got)
	}
	if v := cs.InitializeResult().ServerInfo.Version; v != "test" {
		t.Errorf("server version %q", v)
	}
	text, isErr := callTool(t, cs, "time_remaining", nil, nil)
	if isErr || !strings.HasPrefix(text, "1h30m0s left") {
		t.Errorf("time_remaining: %v %q", isErr, text)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("the server process did not exit cleanly when its stdin closed: %v", cmd.ProcessState)
	}
}

// TestServeProcessDisconnectMidCall: the agent goes away (its end of the
// pipes closes) while a tool call is in flight; the server cancels the
// daemon call and exits 0.
func TestServeProcessDisconnectMidCall(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SESSIOND_MCP_TEST_SERVER=1", "SESSIOND_MCP_TEST_BLOCK=1", "SESSIOND_MCP_TEST_RECORD="+record, "SESSIOND_SESSION_ID="+testSession)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			started <- sc.Text()
		}
		close(started)
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(context.Background(), &sdk.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "checkpoint"})
		errc <- err
	}()
	select {
	case line := <-started:
		if line != "checkpoint started" {
			t.Fatalf("server said %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the checkpoint call did not reach the server's daemon")
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the server process: %v", err)
	}
	got, err := os.ReadFile(record)
	if err != nil || string(got) != "context canceled" {
		t.Errorf("the daemon call ended with %q (%v), want context canceled", got, err)
	}
	if err := <-errc; err == nil {
		t.Error("the call in flight returned no error")
	}
	cs.Close()
}
