package term

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sessiond/sessiond/ipc"
)

// The test binary doubles as the programs the tests need, chosen by
// TERMTEST_MODE: the holder itself, a parent that starts a holder and
// waits to be killed, and a client that dials a holder's socket.
func TestMain(m *testing.M) {
	switch os.Getenv("TERMTEST_MODE") {
	case "holder":
		if p := os.Getenv("TERMTEST_CPUPROFILE"); p != "" {
			f, _ := os.Create(p)
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		ctx, _ := signal.NotifyContext(context.Background(), syscall.SIGUSR1)
		err := RunHolder(ctx, os.Stdin, os.Stdout)
		pprof.StopCPUProfile()
		if err != nil {
			fmt.Fprintln(os.Stderr, "holder:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "parent":
		os.Exit(runParent())
	case "dial":
		os.Exit(runDial())
	case "attach":
		os.Exit(runAttachProgram())
	}
	// The benchmarks' build of sessiond goes with the test binary.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeBenchBuild()
		os.Exit(code)
	}))
}

// holderOptions runs the test binary as the holder.
func holderOptions() StartOptions {
	return StartOptions{Executable: os.Args[0], Args: []string{}, Env: []string{"TERMTEST_MODE=holder", "GORACE=atexit_sleep_ms=0"}}
}

// runParent starts a holder for the spec in TERMTEST_SPEC, prints its Info
// and sleeps until killed.
func runParent() int {
	var spec Spec
	if err := json.Unmarshal([]byte(os.Getenv("TERMTEST_SPEC")), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := Start(ctx, spec, holderOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(h.Info())
	time.Sleep(time.Hour)
	return 0
}

// runDial connects to the socket in TERMTEST_SOCKET, says hello and
// prints the first frame it gets back.
func runDial() int {
	c, err := net.Dial("unix", os.Getenv("TERMTEST_SOCKET"))
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	_ = ipc.WriteTermJSON(c, ipc.TermFrameHello, ipc.TermRequest{Op: ipc.TermOpStatus})
	f, err := ipc.ReadTermFrame(c)
	if err != nil {
		fmt.Println("read:", err)
		return 1
	}
	fmt.Printf("%s %s\n", f.Type, f.Payload)
	return 0
}

// shortDir is a directory whose socket path stays under the kernel's limit.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// testSpec is a spec running argv in a fresh project dir, with its session
// dir and log in a fresh short dir.
func testSpec(t *testing.T, argv ...string) Spec {
	t.Helper()
	sd := shortDir(t)
	return Spec{
		Argv:       argv,
		Dir:        t.TempDir(),
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8", "PS1=$ "},
		SessionDir: sd,
		LogPath:    filepath.Join(sd, "output.log"),
	}
}

// startHolder starts a holder for spec and, at the end of the test, makes
// sure it is gone and that its diagnostics show no race or panic.
func startHolder(t *testing.T, spec Spec) *Holder {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := Start(ctx, spec, holderOptions())
	if err != nil {
		diag, _ := os.ReadFile(filepath.Join(spec.SessionDir, DiagName))
		t.Fatalf("start holder: %v\n%s", err, diag)
	}
	t.Cleanup(func() { endHolder(t, h) })
	return h
}

// endHolder kills what is left of a holder and its child and checks the
// holder's diagnostics.
func endHolder(t *testing.T, h *Holder) {
	info := h.Info()
	_ = syscall.Kill(-info.ChildPID, syscall.SIGKILL)
	waitFor(t, 10*time.Second, "holder to end", func() bool { return !alive(info.HolderPID) })
	diag, _ := os.ReadFile(filepath.Join(h.Dir(), DiagName))
	for _, bad := range []string{"DATA RACE", "panic:", "fatal error"} {
		if strings.Contains(string(diag), bad) {
			t.Errorf("holder diagnostics show %q:\n%s", bad, diag)
		}
	}
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitScreen waits until the screen's text contains want and returns it.
func waitScreen(t *testing.T, h *Holder, want string) ipc.TermScreen {
	t.Helper()
	var scr ipc.TermScreen
	var err error
	// A flood of tens of thousands of lines through the emulator under
	// the race detector, on a loaded machine, takes more than ten seconds.
	deadline := time.Now().Add(30 * time.Second)
	for {
		scr, err = h.Screen(context.Background(), 0)
		if err == nil && strings.Contains(scr.Text(), want) {
			return scr
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen never showed %q (last error %v); it shows:\n%s", want, err, scr.Text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit waits for the child's exit through the holder.
func waitExit(t *testing.T, h *Holder) ipc.TermExit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ex, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return ex
}

// cpuTicks is the user and system time pid has used, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	var u, s int
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &s)
	return u + s
}
