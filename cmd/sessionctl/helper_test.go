package main

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mcpAnswers has the sessionctl at bin answer an MCP client's initialize,
// and returns the answer.
func mcpAnswers(t *testing.T, bin, sock string) string {
	t.Helper()
	c := exec.Command(bin, "--socket", sock, "mcp")
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer time.AfterFunc(30*time.Second, func() { c.Process.Kill() }).Stop()
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`+"\n")
	// A client keeps stdin open until it has its answer.
	answer, _ := bufio.NewReader(stdout).ReadString('\n')
	in.Close()
	if err := c.Wait(); err != nil {
		t.Errorf("sessionctl mcp: %v", err)
	}
	return answer
}

func build(t *testing.T, out string, args ...string) {
	t.Helper()
	if b, err := exec.Command("go", append(append([]string{"build", "-o", out}, args...), ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
}

// TestHelperLookup: the sessionctl of make build and the packages (tag
// sessionctl_helpers) installed without sessionctl-mcp says where it
// looked for it and fails; with the helper in ../libexec/sessiond, where
// the packages put it, `sessionctl mcp` serves. A sessionctl built alone,
// as go install builds it, serves in its own process.
func TestHelperLookup(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	bin := filepath.Join(dir, "bin", "sessionctl")
	build(t, bin, "-tags", "sessionctl_helpers")
	out, err := exec.Command(bin, "--socket", sock, "mcp").CombinedOutput()
	want := "sessionctl-mcp is not installed: sessionctl looked for it at " + filepath.Join(dir, "bin", "sessionctl-mcp") +
		" and " + filepath.Join(dir, "libexec", "sessiond", "sessionctl-mcp")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailed || !strings.Contains(string(out), want) {
		t.Errorf("sessionctl mcp without its helper: %v\n%s\nwant exit %d and %q", err, out, exitFailed, want)
	}

	helper := filepath.Join(dir, "libexec", "sessiond", "sessionctl-mcp")
	if out, err := exec.Command("go", "build", "-o", helper, "./libexec/sessionctl-mcp").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if answer := mcpAnswers(t, bin, sock); !strings.Contains(answer, `"serverInfo":{"name":"sessiond"`) {
		t.Errorf("sessionctl mcp with its helper in libexec/sessiond: %s", answer)
	}

	alone := filepath.Join(t.TempDir(), "sessionctl")
	build(t, alone)
	if answer := mcpAnswers(t, alone, sock); !strings.Contains(answer, `"serverInfo":{"name":"sessiond"`) {
		t.Errorf("sessionctl built alone (go install): mcp answered %s", answer)
	}
}
