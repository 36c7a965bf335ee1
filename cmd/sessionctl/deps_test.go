package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestThinClient keeps sessionctl a thin client: it talks to the daemon
// through ipc and links neither the supervisor's code, nor the API server,
// nor the daemon's heavy dependencies.
func TestThinClient(t *testing.T) {
	forbidLinks(t, "", "it may import only ipc and config",
		"github.com/sessiond/sessiond/daemon",
		"github.com/sessiond/sessiond/ipc/server",
		"github.com/sessiond/sessiond/config/configfile",
		"go.uber.org/zap",
		"github.com/BurntSushi/toml",
		"github.com/robfig/cron",
		"github.com/fsnotify/fsnotify",
	)
}

// TestHeavyCommandsAreHelpers keeps the MCP server and the dashboard in
// binaries of their own in the build make build and the packages make
// (helper_exec.go): their libraries would cost every command of sessionctl
// its start-up.
func TestHeavyCommandsAreHelpers(t *testing.T) {
	forbidLinks(t, "sessionctl_helpers", "it belongs to sessionctl-mcp or sessionctl-ui",
		"github.com/sessiond/sessiond/cmd/sessionctl/mcp",
		"github.com/sessiond/sessiond/cmd/sessionctl/ui",
		"github.com/modelcontextprotocol/go-sdk",
		"charm.land/bubbletea/v2",
		"github.com/charmbracelet/ultraviolet",
	)
}

// forbidLinks fails for each package of sessionctl, built with tags, that
// is one of forbidden or below one of them.
func forbidLinks(t *testing.T, tags, why string, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", tags, "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("sessionctl depends on %s; %s", pkg, why)
			}
		}
	}
}

// TestNoHTTPStack keeps net/http and TLS out of sessionctl: their package
// initialisers, page faults and the Transport's threads were half of what
// every command cost before its first request (bench/README.md, "Where
// sessionctl ps's time goes"). ipc speaks HTTP/1.1 on the socket itself.
func TestNoHTTPStack(t *testing.T) {
	forbidLinks(t, "sessionctl_helpers", "ipc's own HTTP/1.1 client (ipc/wire.go) is all a command needs",
		"net/http",
		"crypto/tls",
		"crypto/x509",
	)
}

// TestNoCryptoModule keeps the FIPS 140 module out of sessionctl: a
// project's id, the one digest a command needs, comes from ipc/sum256, and
// crypto/sha256's dozen packages' initialisers cost every command
// 0.05-0.09 ms.
func TestNoCryptoModule(t *testing.T) {
	forbidLinks(t, "sessionctl_helpers", "a digest sessionctl needs is ipc/sum256's", "crypto")
}
