package e2e

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Paths of the binaries built by TestMain.
var (
	binDir        string
	sessiondBin   string
	sessionctlBin string
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(holdEnv); spec != "" {
		// This binary, re-run as another user, holds connections open.
		os.Exit(holdConnections(spec))
	}
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	binDir, err = os.MkdirTemp("", "sessiond-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(binDir)
	// Throwaway users of the root-mode tests run these binaries too.
	if err := os.Chmod(binDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// As make build and the packages build them: the terminal holder and
	// sessionctl's helpers binaries of their own.
	build := exec.Command("go", "build", "-tags", "sessionctl_helpers", "-o", binDir+string(filepath.Separator), "./cmd/sessiond", "./cmd/sessiond/libexec/...", "./cmd/sessionctl", "./cmd/sessionctl/libexec/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build in %s: %v\n%s", root, err, out)
		return 1
	}
	sessiondBin = filepath.Join(binDir, "sessiond")
	sessionctlBin = filepath.Join(binDir, "sessionctl")

	code := m.Run()
	agenttest.Cleanup()
	// The tests start goroutines only to wait for processes; none may be
	// left once every daemon and follower has been waited for.
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: leaked goroutines:", err)
		code = 1
	}
	return code
}

// moduleRoot finds the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
