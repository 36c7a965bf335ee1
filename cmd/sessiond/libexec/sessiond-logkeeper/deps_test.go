package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestKeeperStaysSmall keeps the daemon's own packages out of the log
// keeper's executable, which is in memory for as long as any session
// writes a log.
func TestKeeperStaysSmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/sessiond/sessiond/cmd/sessiond/libexec/sessiond-logkeeper").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, pkg := range []string{
		"github.com/sessiond/sessiond/daemon", "github.com/sessiond/sessiond/daemon/sessions",
		"github.com/sessiond/sessiond/daemon/session", "github.com/sessiond/sessiond/daemon/term",
		"github.com/sessiond/sessiond/ipc/server", "github.com/spf13/cobra", "github.com/kardianos/service",
	} {
		for _, d := range deps {
			if d == pkg {
				t.Errorf("sessiond-logkeeper links %s", pkg)
			}
		}
	}
	if !strings.Contains(string(out), "github.com/sessiond/sessiond/daemon/logkeep\n") {
		t.Errorf("sessiond-logkeeper does not link the keeper (daemon/logkeep):\n%s", out)
	}
}
