package term

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc/attach"
)

// runAttachProgram is what a person runs to attach: it connects to the
// holder of TERMTEST_DIR, attaches as the writer and runs the attach loop
// on its own terminal, then says how the attach ended.
func runAttachProgram() int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	h, err := Connect(ctx, os.Getenv("TERMTEST_DIR"))
	if err != nil {
		cancel()
		fmt.Println("[connect:", err, "]")
		return 1
	}
	conn, _, err := h.Attach(ctx, false)
	cancel()
	if err != nil {
		fmt.Println("[attach:", err, "]")
		return 1
	}
	res, err := attach.Run(context.Background(), conn, attach.Options{})
	switch {
	case err != nil:
		fmt.Printf("[attach failed: %v]\r\n", err)
	case res.Reason == attach.Ended:
		fmt.Printf("[attach ended: %s]\r\n", res.Exit)
	case res.Reason == attach.Lost:
		fmt.Printf("[attach ended: %s: %v]\r\n", res.Reason, res.Err)
	default:
		fmt.Printf("[attach ended: %s]\r\n", res.Reason)
	}
	return 0
}

// tmuxServer is a private tmux server for one test.
type tmuxServer struct {
	t    *testing.T
	sock string
}

func newTmux(t *testing.T) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed on this machine")
	}
	s := &tmuxServer{t: t, sock: fmt.Sprintf("termtest-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.sock, "kill-server").Run() })
	return s
}

func (s *tmuxServer) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitPane waits until the pane shows every one of want.
func (s *tmuxServer) waitPane(target string, want ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		pane := s.run("capture-pane", "-p", "-t", target)
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(pane, w)
		}
		if ok {
			return pane
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("pane %s never showed %q; it shows:\n%s", target, want, pane)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A person attaches in a real terminal (tmux), types, resizes the window,
// detaches with ctrl-] and finds the terminal as it was; the session goes
// on, and a later attach sees it end.
func TestAttachThroughTmux(t *testing.T) {
	tm := newTmux(t)
	spec := testSpec(t, "/bin/sh", "-c", `echo READY; while read line; do [ "$line" = quit ] && exit 4; echo "got:$line size:$(stty size)"; done`)
	h := startHolder(t, spec)
	waitScreen(t, h, "READY")

	// The attach runs in a pane of 100x30; afterwards the pane's shell
	// shows the terminal's modes.
	script := fmt.Sprintf("%s; echo AFTER-ATTACH; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '; echo; sleep 600", os.Args[0])
	tm.run("new-session", "-d", "-s", "one", "-x", "100", "-y", "30",
		"-e", "TERMTEST_MODE=attach", "-e", "TERMTEST_DIR="+spec.SessionDir, "-e", "GORACE=atexit_sleep_ms=0",
		"/bin/sh", "-c", script)
	tm.waitPane("one", "READY")

	// Raw mode: keys go to the session one by one (the session's terminal
	// echoes them before any Enter).
	tm.run("send-keys", "-t", "one", "-l", "abc")
	tm.waitPane("one", "abc")
	if scr := waitScreen(t, h, "abc"); strings.Contains(scr.Text(), "got:abc") {
		t.Fatal("the line was submitted before Enter")
	}
	tm.run("send-keys", "-t", "one", "Enter")
	// The window size came with the attach.
	tm.waitPane("one", "got:abc size:30 100")

	// A resize of the window reaches the session.
	tm.run("resize-window", "-t", "one", "-x", "120", "-y", "40")
	// The size travels apart from the keys (on SIGWINCH): wait for it
	// before typing, or the line may be read at the old size.
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := h.Status(context.Background())
		if err == nil && st.Size.Cols == 120 && st.Size.Rows == 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new window size never reached the terminal: %+v, %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tm.run("send-keys", "-t", "one", "-l", "again")
	tm.run("send-keys", "-t", "one", "Enter")
	tm.waitPane("one", "got:again size:40 120")

	// ctrl-] detaches; the terminal is back in cooked mode with echo.
	tm.run("send-keys", "-t", "one", "C-]")
	pane := tm.waitPane("one", "[attach ended: detached]", "AFTER-ATTACH", "icanon echo")
	if strings.Contains(pane, "-icanon") || strings.Contains(pane, "-echo") {
		t.Fatalf("the terminal was left raw:\n%s", pane)
	}
	// The session goes on without a viewer.
	st, err := h.Status(context.Background())
	if err != nil || st.Viewers != 0 || st.Writer {
		t.Fatalf("after the detach: %+v, %v", st, err)
	}
	if err := h.Send(context.Background(), "unseen", true); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "got:unseen")

	// A second attach repaints what happened meanwhile, and is there when
	// the session ends.
	tm.run("new-session", "-d", "-s", "two", "-x", "90", "-y", "25",
		"-e", "TERMTEST_MODE=attach", "-e", "TERMTEST_DIR="+spec.SessionDir, "-e", "GORACE=atexit_sleep_ms=0",
		"/bin/sh", "-c", script)
	tm.waitPane("two", "got:unseen")
	tm.run("send-keys", "-t", "two", "-l", "quit")
	tm.run("send-keys", "-t", "two", "Enter")
	tm.waitPane("two", "[attach ended: exit code 4]", "AFTER-ATTACH", "icanon echo")
	if ex := waitExit(t, h); ex.Code != 4 {
		t.Fatalf("exit %s", ex)
	}
}
