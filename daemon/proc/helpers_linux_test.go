package proc

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestKillHelpersBySession kills the helpers whose environment names the
// session, with their process groups, and only those: a helper of another
// session and one of none go on.
func TestKillHelpersBySession(t *testing.T) {
	var grandchild int
	start := func(env ...string) *exec.Cmd {
		t.Helper()
		// A child of the helper in its group: the kill takes it too.
		cmd := exec.Command("/bin/sh", "-c", "sleep 100 & echo $!; wait")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := Start(cmd); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fscan(out, &grandchild); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = Wait(cmd)
		})
		return cmd
	}
	mine := start("SESSIOND_SESSION_ID=other", "SESSIOND_SESSION_ID=mine") // the last one counts
	sleeper := grandchild
	other := start("SESSIOND_SESSION_ID=other")
	none := start()

	if n := KillHelpers(""); n != 0 {
		t.Fatalf(`KillHelpers("") killed %d`, n)
	}
	if n := KillHelpers("mine"); n != 1 {
		t.Fatalf(`KillHelpers("mine") killed %d, want 1`, n)
	}
	done := make(chan error, 1)
	go func() { done <- Wait(mine) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's helper is still running after KillHelpers")
	}
	if ws := mine.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Errorf("helper exit = %v, want SIGKILL", mine.ProcessState)
	}
	// Gone, or a zombie left to whoever reaps it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, err := readStat(sleeper); err != nil || st.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the helper's process group outlived KillHelpers")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range []*exec.Cmd{other, none} {
		if err := c.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("helper %d of another session was killed: %v", c.Process.Pid, err)
		}
	}
}
