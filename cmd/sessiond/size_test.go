package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinkerDropsUnusedMethods: nothing reachable in sessiond calls a
// method by a name known only at run time (reflect's Method and
// MethodByName, which text/template's execution does). One such call makes
// the linker keep every exported method of every type that can reach an
// interface, reachable or not: it once made the executable 14.7 MB instead
// of 12.2, and since the kernel maps most of an executable's pages around
// those it touches, the daemon's resident memory 2 MiB larger.
func TestLinkerDropsUnusedMethods(t *testing.T) {
	cmd := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "sessiond"), ".")
	var deps bytes.Buffer
	cmd.Stderr = &deps
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build: %v\n%.2000s", err, deps.String())
	}
	lines, keeping := 0, map[string]bool{}
	sc := bufio.NewScanner(&deps)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		lines++
		// "caller -> callee", either marked "<ReflectMethod>".
		for _, side := range strings.Split(sc.Text(), " -> ") {
			if f, ok := strings.CutSuffix(side, " <ReflectMethod>"); ok {
				keeping[f] = true
			}
		}
	}
	if lines < 1000 {
		t.Fatalf("the linker printed %d lines of dependencies; -dumpdep did not work:\n%.2000s", lines, deps.String())
	}
	for f := range keeping {
		t.Errorf("%s calls a method by a run-time name: every exported method stays in the executable", f)
	}
}
