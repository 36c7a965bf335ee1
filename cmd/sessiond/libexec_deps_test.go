package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLibexecStaysSmall keeps the daemon's own packages out of the
// executables of the terminal holder and the log keeper: whatever they
// link is in the memory of every terminal's holder for as long as its
// session lives, and of the keeper for as long as any session writes a log.
func TestLibexecStaysSmall(t *testing.T) {
	forbidden := []string{
		"github.com/sessiond/sessiond/daemon", "github.com/sessiond/sessiond/daemon/sessions",
		"github.com/sessiond/sessiond/daemon/session", "github.com/sessiond/sessiond/ipc/server",
		"github.com/spf13/cobra", "github.com/kardianos/service",
		// Making a cgroup is the daemon's (package cgroup); a helper starts
		// processes in one through package cgroupfs. The libraries that
		// making one takes kept half a megabyte in each helper by their
		// package initialisers alone.
		"github.com/sessiond/sessiond/daemon/cgroup", "github.com/containerd/cgroups/v3",
		"google.golang.org/protobuf/proto", "github.com/cilium/ebpf", "github.com/godbus/dbus/v5",
	}
	for prog, c := range map[string]struct {
		own   string   // the package it is
		extra []string // forbidden in it alone
	}{
		// The holder serves no HTTP and logs no JSON of its own.
		"sessiond-holder":    {"github.com/sessiond/sessiond/daemon/term", []string{"net/http", "go.uber.org/zap"}},
		"sessiond-logkeeper": {"github.com/sessiond/sessiond/daemon/logkeep", nil},
	} {
		out, err := exec.Command("go", "list", "-deps", "github.com/sessiond/sessiond/cmd/sessiond/libexec/"+prog).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", prog, err)
		}
		deps := strings.Fields(string(out))
		for _, pkg := range append(forbidden, c.extra...) {
			if slices.Contains(deps, pkg) {
				t.Errorf("%s links %s", prog, pkg)
			}
		}
		if !slices.Contains(deps, c.own) {
			t.Errorf("%s does not link %s", prog, c.own)
		}
	}
}
