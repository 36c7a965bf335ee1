package proc

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// signalsTestEnv runs the test binary as signalsChild.
const signalsTestEnv = "PROCTEST_SIGNALS"

// signalsChild prints the SigIgn mask of a shell it starts, having called
// DefaultSignalsForChildren first when mode is "reset".
func signalsChild(mode string) int {
	if mode == "reset" {
		DefaultSignalsForChildren()
	}
	out, err := exec.Command("/bin/sh", "-c", "grep '^SigIgn:' /proc/self/status").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Stdout.Write(out)
	return 0
}

// A process started ignoring SIGHUP and SIGINT (nohup, a script's
// background job) starts its children with them at their default once it
// has called DefaultSignalsForChildren, and passes the SIG_IGN on without.
func TestDefaultSignalsForChildren(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the mask of ignored signals is read from /proc/self/status, Linux's")
	}
	// This process's children, the test binary again, start ignoring them.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT)
	defer signal.Reset(syscall.SIGHUP, syscall.SIGINT)
	for _, c := range []struct {
		mode    string
		ignored bool
	}{{"plain", true}, {"reset", false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), signalsTestEnv+"="+c.mode)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(out), "SigIgn:")), 16, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", c.mode, out, err)
		}
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
			if got := mask&(1<<(sig-1)) != 0; got != c.ignored {
				t.Errorf("%s: the grandchild ignores %v: %v, want %v (SigIgn %x)", c.mode, sig, got, c.ignored, mask)
			}
		}
	}
}
