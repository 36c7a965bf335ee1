package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHolderStaysSmall keeps the daemon's own packages out of the holder's
// executable: each is in the memory of every terminal's holder, for as
// long as its session lives.
func TestHolderStaysSmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/sessiond/sessiond/cmd/sessiond/libexec/sessiond-holder").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, pkg := range []string{
		"github.com/sessiond/sessiond/daemon", "github.com/sessiond/sessiond/daemon/sessions",
		"github.com/sessiond/sessiond/daemon/session", "github.com/sessiond/sessiond/ipc/server",
		"net/http", "github.com/spf13/cobra", "go.uber.org/zap", "github.com/kardianos/service",
	} {
		for _, d := range deps {
			if d == pkg {
				t.Errorf("sessiond-holder links %s", pkg)
			}
		}
	}
	if !strings.Contains(string(out), "github.com/sessiond/sessiond/daemon/term\n") {
		t.Errorf("sessiond-holder does not link the holder (daemon/term):\n%s", out)
	}
}
