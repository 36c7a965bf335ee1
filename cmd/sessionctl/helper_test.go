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

// TestHelperLookup: a sessionctl installed without sessionctl-mcp says
// where it looked for it and fails; with the helper in
// ../libexec/sessiond, where the packages put it, `sessionctl mcp` serves.
func TestHelperLookup(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "sessionctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mcp := func() *exec.Cmd { return exec.Command(bin, "--socket", filepath.Join(dir, "s.sock"), "mcp") }

	out, err := mcp().CombinedOutput()
	want := "sessionctl-mcp is not installed: sessionctl looked for it at " + filepath.Join(dir, "bin", "sessionctl-mcp") +
		" and " + filepath.Join(dir, "libexec", "sessiond", "sessionctl-mcp")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailed || !strings.Contains(string(out), want) {
		t.Errorf("sessionctl mcp without its helper: %v\n%s\nwant exit %d and %q", err, out, exitFailed, want)
	}

	helper := filepath.Join(dir, "libexec", "sessiond", "sessionctl-mcp")
	if out, err := exec.Command("go", "build", "-o", helper, "./libexec/sessionctl-mcp").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c := mcp()
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
	if err := c.Wait(); err != nil || !strings.Contains(answer, `"serverInfo":{"name":"sessiond"`) {
		t.Errorf("sessionctl mcp with its helper in libexec/sessiond: %v\n%s", err, answer)
	}
}
