package attach

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/ipc"
)

// rig is a user's terminal (a real pty: the attach reads and writes its
// slave side, the test plays the terminal emulator on the master) and the
// holder's end of a real socket.
type rig struct {
	t       *testing.T
	master  *os.File
	slave   *os.File
	slaveFd int      // asked for once: Fd makes the file blocking again
	holder  net.Conn // the holder's end
	client  net.Conn // the attach's end
	fr      *ipc.TermFrameReader

	mu     sync.Mutex
	screen bytes.Buffer // what the attach wrote to the terminal
	read   sync.WaitGroup

	result chan Result
}

func newRig(t *testing.T, size ipc.TermSize) *rig {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Cols: uint16(size.Cols), Rows: uint16(size.Rows)}); err != nil {
		t.Fatal(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "socket")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	r := &rig{t: t, master: master, slave: slave, slaveFd: int(slave.Fd()), holder: conn(fds[0]), result: make(chan Result, 1)}
	client := conn(fds[1])
	r.fr = ipc.NewTermFrameReader(r.holder)
	r.read.Add(1)
	go func() {
		defer r.read.Done()
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.screen.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		r.holder.Close()
		slave.Close()
		master.Close()
		r.read.Wait()
	})
	r.client = client
	return r
}

func (r *rig) run(opt Options) {
	opt.In, opt.Out = r.slave, r.slave
	go func() {
		res, err := Run(context.Background(), r.client, opt)
		if err != nil {
			res = Result{Reason: -1, Err: err}
		}
		r.result <- res
	}()
}

func (r *rig) termios() *unix.Termios {
	r.t.Helper()
	tio, err := unix.IoctlGetTermios(r.slaveFd, unix.TCGETS)
	if err != nil {
		r.t.Fatal(err)
	}
	return tio
}

func (r *rig) waitRaw(raw bool) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for (r.termios().Lflag&unix.ICANON == 0) != raw {
		if time.Now().After(deadline) {
			r.t.Fatalf("terminal never went raw=%v", raw)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// next reads the next frame the attach sent.
func (r *rig) next() ipc.TermFrame {
	r.t.Helper()
	_ = r.holder.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := r.fr.Next()
	if err != nil {
		r.t.Fatalf("reading from the attach: %v", err)
	}
	return ipc.TermFrame{Type: f.Type, Payload: append([]byte(nil), f.Payload...)}
}

func (r *rig) sendFrame(t ipc.TermFrameType, p []byte) {
	r.t.Helper()
	if err := ipc.WriteTermFrame(r.holder, t, p); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) waitScreen(want string) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		got := r.screen.String()
		r.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the terminal never showed %q; it got %q", want, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *rig) wait() Result {
	r.t.Helper()
	select {
	case res := <-r.result:
		return res
	case <-time.After(5 * time.Second):
		r.t.Fatal("the attach did not end")
		return Result{}
	}
}

func TestAttachDetach(t *testing.T) {
	r := newRig(t, ipc.TermSize{Cols: 100, Rows: 30})
	before := r.termios()
	r.run(Options{})
	r.waitRaw(true)
	// The window size comes first.
	f := r.next()
	size, err := ipc.DecodeTermSize(f.Payload)
	if f.Type != ipc.TermFrameResize || err != nil || size != (ipc.TermSize{Cols: 100, Rows: 30}) {
		t.Fatalf("first frame %s %v %v, want a resize to 100x30", f.Type, size, err)
	}
	// Output reaches the terminal.
	r.sendFrame(ipc.TermFrameData, []byte("hello from the session"))
	r.waitScreen("hello from the session")
	// Keystrokes reach the stream, raw: no echo, no line buffering.
	if _, err := r.master.Write([]byte("ab\x03")); err != nil {
		t.Fatal(err)
	}
	var keys []byte
	for len(keys) < 3 {
		f := r.next()
		if f.Type != ipc.TermFrameData {
			t.Fatalf("got %s, want keystrokes", f.Type)
		}
		keys = append(keys, f.Payload...)
	}
	if string(keys) != "ab\x03" {
		t.Fatalf("keys %q, want ab and ctrl-c as they are", keys)
	}
	// A window change is sent on SIGWINCH.
	if err := pty.Setsize(r.master, &pty.Winsize{Cols: 120, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	f = r.next()
	if size, _ := ipc.DecodeTermSize(f.Payload); f.Type != ipc.TermFrameResize || size != (ipc.TermSize{Cols: 120, Rows: 40}) {
		t.Fatalf("after SIGWINCH: %s %v, want a resize to 120x40", f.Type, size)
	}
	// The program goes to the alternate screen; detaching leaves it.
	r.sendFrame(ipc.TermFrameData, []byte("\x1b[?1049hfull screen"))
	r.waitScreen("full screen")
	if _, err := r.master.Write([]byte("x\x1dy")); err != nil {
		t.Fatal(err)
	}
	if f := r.next(); f.Type != ipc.TermFrameData || string(f.Payload) != "x" {
		t.Fatalf("got %s %q, want the keys before the detach key", f.Type, f.Payload)
	}
	if f := r.next(); f.Type != ipc.TermFrameDetach {
		t.Fatalf("got %s, want detach", f.Type)
	}
	res := r.wait()
	if res.Reason != Detached {
		t.Fatalf("result %+v, want detached", res)
	}
	after := r.termios()
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Fatalf("terminal not restored: lflag %x→%x iflag %x→%x", before.Lflag, after.Lflag, before.Iflag, after.Iflag)
	}
	r.waitScreen("\x1b[?1049l")
	r.waitScreen("\x1b[?25h")
	flags, _ := unix.FcntlInt(uintptr(r.slaveFd), unix.F_GETFL, 0)
	if flags&unix.O_NONBLOCK != 0 {
		t.Fatal("the terminal was left non-blocking")
	}
	// The stream was closed.
	_ = r.holder.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.fr.Next(); err == nil {
		t.Fatal("the stream is still open after the detach")
	}
}

func TestAttachEnded(t *testing.T) {
	r := newRig(t, ipc.TermSize{Cols: 80, Rows: 24})
	r.run(Options{})
	r.waitRaw(true)
	r.next() // the size
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	r.sendFrame(ipc.TermFrameData, []byte("bye\r\n"))
	r.sendFrame(ipc.TermFrameExited, []byte(`{"pid":42,"exit_code":3,"exited_at":"2025-01-02T03:04:05Z"}`))
	res := r.wait()
	if res.Reason != Ended || res.Exit == nil || res.Exit.Code != 3 || res.Exit.PID != 42 || !res.Exit.ExitedAt.Equal(at) {
		t.Fatalf("result %+v, want ended with code 3", res)
	}
	r.waitScreen("bye")
	r.waitRaw(false)
	// No alternate screen was entered: none is left.
	r.waitScreen("\x1b[?2004l")
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.Contains(r.screen.String(), "1049l") {
		t.Fatal("left an alternate screen that was never entered")
	}
}

func TestAttachLost(t *testing.T) {
	r := newRig(t, ipc.TermSize{Cols: 80, Rows: 24})
	r.run(Options{})
	r.waitRaw(true)
	r.next()
	r.sendFrame(ipc.TermFrameError, []byte(`{"code":"internal","message":"the holder gave up"}`))
	r.holder.Close()
	res := r.wait()
	if res.Reason != Lost || res.Err == nil || !strings.Contains(res.Err.Error(), "the holder gave up") {
		t.Fatalf("result %+v, want lost with the holder's message", res)
	}
	r.waitRaw(false)
}

func TestAttachReadOnly(t *testing.T) {
	r := newRig(t, ipc.TermSize{Cols: 80, Rows: 24})
	r.run(Options{ReadOnly: true, DetachKey: 0x01})
	r.waitRaw(true)
	r.sendFrame(ipc.TermFrameData, []byte("watching"))
	r.waitScreen("watching")
	// Keys are not forwarded, ctrl-] is just a key, ctrl-a detaches.
	if _, err := r.master.Write([]byte("typed\x1d\x01")); err != nil {
		t.Fatal(err)
	}
	if f := r.next(); f.Type != ipc.TermFrameDetach {
		t.Fatalf("a read-only attach sent %s %q; want only the detach", f.Type, f.Payload)
	}
	if res := r.wait(); res.Reason != Detached {
		t.Fatalf("result %+v", res)
	}
}

func TestAttachContext(t *testing.T) {
	r := newRig(t, ipc.TermSize{Cols: 80, Rows: 24})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		res, _ := Run(ctx, r.client, Options{In: r.slave, Out: r.slave})
		r.result <- res
	}()
	r.waitRaw(true)
	cancel()
	if res := r.wait(); res.Reason != Lost || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("result %+v", res)
	}
	r.waitRaw(false)
}
