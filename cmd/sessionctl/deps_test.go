package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoDaemonImports keeps sessionctl a thin client: it talks to the
// daemon through ipc and never links the supervisor's code.
func TestNoDaemonImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/sessiond/sessiond/daemon") {
			t.Errorf("sessionctl depends on %s; it may import only ipc and config", pkg)
		}
	}
}
