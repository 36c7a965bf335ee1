package term

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// The holder outlives the process that started it (the daemon): that
// process is killed with SIGKILL, and a new client finds the same holder
// and child, the screen intact, attaching works, and the exit status is
// read when the child ends later.
func TestHolderOutlivesParent(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `echo "started, pid $$"; printf 'answer? '; read a; echo "you said $a"; exit 6`)
	blob, _ := json.Marshal(spec)
	parent := exec.Command(os.Args[0])
	parent.Env = []string{"TERMTEST_MODE=parent", "TERMTEST_SPEC=" + string(blob), "GORACE=atexit_sleep_ms=0"}
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	parent.Stderr = os.Stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the parent did not report the holder: %v", err)
	}
	var info Info
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endHolder(t, &Holder{dir: spec.SessionDir, info: info}) })

	// The parent dies as a daemon would on kill -9.
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if !alive(info.HolderPID) || !alive(info.ChildPID) {
		t.Fatal("the holder or its child died with the parent")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := Connect(ctx, spec.SessionDir)
	if err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if got := h.Info(); got != info {
		t.Fatalf("reconnected to %+v, want %+v", got, info)
	}
	st, err := h.Status(ctx)
	if err != nil || st.HolderPID != info.HolderPID || st.ChildPID != info.ChildPID || st.ChildStart != info.ChildStart {
		t.Fatalf("status %+v, %v; want the same pids as %+v", st, err, info)
	}
	scr := waitScreen(t, h, "answer?")
	if !strings.Contains(scr.Text(), "started, pid "+strconv.Itoa(info.ChildPID)) {
		t.Fatalf("screen lost what came before the parent died:\n%s", scr.Text())
	}
	v := openStream(t, h, false)
	v.until("answer?")
	v.send(ipc.TermFrameData, []byte("forty-two\r"))
	v.until("you said forty-two")
	f := v.until("never printed")
	if f.Type != ipc.TermFrameExited {
		t.Fatalf("got %s, want the exit", f.Type)
	}
	ex, err := h.Wait(ctx)
	if err != nil || ex.Code != 6 || ex.PID != info.ChildPID {
		t.Fatalf("wait: %+v, %v; want code 6 of %d", ex, err, info.ChildPID)
	}
	// A daemon that was down when the child ended learns it from the file.
	waitFor(t, 5*time.Second, "holder to end", func() bool { return !alive(info.HolderPID) })
	rec, err := ReadExit(spec.SessionDir)
	if err != nil || rec.Code != 6 {
		t.Fatalf("recorded exit %+v, %v", rec, err)
	}
	if _, err := Connect(ctx, spec.SessionDir); err == nil || !strings.Contains(err.Error(), "exit code 6") {
		t.Fatalf("connect after the end: %v", err)
	}
}
