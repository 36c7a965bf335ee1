package term

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// A shell script on the terminal prints, reads a line and answers; the line
// is typed through Send, the answer is seen on the screen and in the log,
// and the exit status is recorded.
func TestShellDialog(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `printf 'name? '; read name; echo "hello, $name"; exit 3`)
	h := startHolder(t, spec)
	info := h.Info()
	if info.HolderPID <= 0 || info.ChildPID <= 0 || info.ChildStart == 0 || info.HolderPID == info.ChildPID {
		t.Fatalf("info %+v", info)
	}
	waitScreen(t, h, "name?")
	if err := h.Send(context.Background(), "world", true); err != nil {
		t.Fatal(err)
	}
	ex := waitExit(t, h)
	if ex.Code != 3 || ex.Signal != "" || ex.PID != info.ChildPID {
		t.Fatalf("exit %+v, want code 3 of pid %d", ex, info.ChildPID)
	}
	rec, err := ReadExit(spec.SessionDir)
	if err != nil || rec != ex {
		t.Fatalf("recorded exit %+v, %v; want %+v", rec, err, ex)
	}
	log, _ := os.ReadFile(spec.LogPath)
	// The terminal echoes what was typed, then the script answers.
	if !strings.Contains(string(log), "name? world\r\nhello, world\r\n") {
		t.Fatalf("log %q lacks the dialog", log)
	}
	for _, name := range []string{InfoName, ExitName, DiagName} {
		fi, err := os.Stat(filepath.Join(spec.SessionDir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", name, err, fi.Mode())
		}
	}
	// The socket goes with the holder; asking now says how the child ended.
	waitFor(t, 5*time.Second, "holder to end", func() bool { return !alive(info.HolderPID) })
	if _, err := h.Status(context.Background()); !errors.Is(err, ErrExited) {
		t.Fatalf("status after the end: %v, want ErrExited", err)
	}
	var ee *ExitedError
	if _, err := Connect(context.Background(), spec.SessionDir); !errors.As(err, &ee) || ee.Exit.Code != 3 {
		t.Fatalf("connect after the end: %v, want an ExitedError with code 3", err)
	}
}

// The spec's environment reaches the child, TERM is set, HOME follows the
// spec, and the environment is nowhere in the session dir.
func TestChildEnvironment(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `echo "[$SECRET|$TERM|$HOME|$(tty)|${GOMAXPROCS-unset}]"; read x`)
	spec.Env = append(spec.Env, "SECRET=hunter2-secret")
	spec.Home = "/home/someone"
	h := startHolder(t, spec)
	scr := waitScreen(t, h, "hunter2-secret")
	if !strings.Contains(scr.Text(), "[hunter2-secret|xterm-256color|/home/someone|/dev/pts/") || !strings.Contains(scr.Text(), "|unset]") {
		t.Fatalf("screen %q", scr.Text())
	}
	// The holder runs with one P from its start; the child gets none of
	// the holder's own environment.
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", h.Info().HolderPID))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(env), "\x00"), "GOMAXPROCS=1") {
		t.Errorf("the holder's environment %q lacks GOMAXPROCS=1", env)
	}
	entries, _ := os.ReadDir(spec.SessionDir)
	for _, e := range entries {
		if e.Name() == "output.log" {
			continue // the child printed it there itself
		}
		b, _ := os.ReadFile(filepath.Join(spec.SessionDir, e.Name()))
		if strings.Contains(string(b), "hunter2") {
			t.Errorf("%s holds the secret", e.Name())
		}
	}
	_ = h.Send(context.Background(), "", true)
	waitExit(t, h)
}

// A full-screen program (vi) is seen through the screen call: the file's
// lines, the tildes past its end, the alternate screen, the cursor.
func TestFullScreenVi(t *testing.T) {
	vi, err := exec.LookPath("vi")
	if err != nil {
		t.Skip("vi is not installed on this machine")
	}
	spec := testSpec(t, vi, "-u", "NONE", "-N", "notes.txt")
	if err := os.WriteFile(filepath.Join(spec.Dir, "notes.txt"), []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.Size = ipc.TermSize{Cols: 60, Rows: 12}
	h := startHolder(t, spec)
	scr := waitScreen(t, h, "second line")
	if scr.Size != (ipc.TermSize{Cols: 60, Rows: 12}) || len(scr.Lines) != 12 {
		t.Fatalf("size %v with %d lines", scr.Size, len(scr.Lines))
	}
	if scr.Lines[0] != "first line" || scr.Lines[1] != "second line" || scr.Lines[2] != "~" {
		t.Fatalf("top of screen %q", scr.Lines[:3])
	}
	if !scr.AltScreen {
		t.Errorf("vi runs on the alternate screen; screen says it does not")
	}
	if !strings.Contains(scr.Lines[11], "notes.txt") {
		t.Errorf("status line %q does not name the file", scr.Lines[11])
	}
	if scr.Cursor.X != 0 || scr.Cursor.Y != 0 {
		t.Errorf("cursor at %d,%d; want 0,0", scr.Cursor.X, scr.Cursor.Y)
	}
	// Type into vi: a line at the top, then write and quit.
	if err := h.Send(context.Background(), "Onew top\x1b", false); err != nil {
		t.Fatal(err)
	}
	scr = waitScreen(t, h, "new top")
	if scr.Lines[0] != "new top" || scr.Lines[1] != "first line" {
		t.Fatalf("after the insert: %q", scr.Lines[:3])
	}
	if err := h.Send(context.Background(), ":wq", true); err != nil {
		t.Fatal(err)
	}
	if ex := waitExit(t, h); ex.Code != 0 {
		t.Fatalf("vi ended with %s", ex)
	}
	b, _ := os.ReadFile(filepath.Join(spec.Dir, "notes.txt"))
	if string(b) != "new top\nfirst line\nsecond line\n" {
		t.Fatalf("file %q", b)
	}
}

// attachStream is a test viewer: it reads frames from an attach stream.
type attachStream struct {
	t    *testing.T
	c    net.Conn
	fr   *ipc.TermFrameReader
	seen strings.Builder
}

func openStream(t *testing.T, h *Holder, readOnly bool) *attachStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := h.Attach(ctx, readOnly)
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &attachStream{t: t, c: c, fr: ipc.NewTermFrameReader(c)}
}

// until reads frames until the output seen contains want (any output when
// want is ""), or an exit or error frame arrives; it returns that last
// frame. Ten seconds without a frame fail the test.
func (a *attachStream) until(want string) ipc.TermFrame {
	a.t.Helper()
	for {
		// Ten seconds without a frame is a stall; a loaded machine may
		// take longer than that for all of a flood.
		_ = a.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		f, err := a.fr.Next()
		if err != nil {
			a.t.Fatalf("reading the stream for %q: %v; seen %q", want, err, a.seen.String())
		}
		switch f.Type {
		case ipc.TermFrameData:
			a.seen.Write(f.Payload)
			if strings.Contains(a.seen.String(), want) {
				return f
			}
		case ipc.TermFrameExited, ipc.TermFrameError:
			return ipc.TermFrame{Type: f.Type, Payload: append([]byte(nil), f.Payload...)}
		default:
			a.t.Fatalf("unexpected %s frame", f.Type)
		}
	}
}

func (a *attachStream) send(typ ipc.TermFrameType, payload []byte) {
	a.t.Helper()
	if err := ipc.WriteTermFrame(a.c, typ, payload); err != nil {
		a.t.Fatalf("send %s: %v", typ, err)
	}
}

// One writer at a time: a second is refused with ErrWriterTaken,
// read-only viewers are welcome, and the writer's slot frees on detach.
func TestOneWriter(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `while read line; do echo "got:$line"; done`)
	h := startHolder(t, spec)
	w1 := openStream(t, h, false)
	w1.until("")
	ctx := context.Background()
	if _, _, err := h.Attach(ctx, false); !errors.Is(err, ErrWriterTaken) {
		t.Fatalf("second writer: %v, want ErrWriterTaken", err)
	}
	r1 := openStream(t, h, true)
	r2 := openStream(t, h, true)
	st, err := h.Status(ctx)
	if err != nil || !st.Writer || st.Viewers != 3 {
		t.Fatalf("status %+v, %v; want a writer among 3 viewers", st, err)
	}
	// The writer types; every viewer sees it.
	w1.send(ipc.TermFrameData, []byte("alpha\r"))
	w1.until("got:alpha")
	r1.until("got:alpha")
	r2.until("got:alpha")
	// A read-only viewer's keys go nowhere.
	r1.send(ipc.TermFrameData, []byte("beta\r"))
	w1.send(ipc.TermFrameData, []byte("gamma\r"))
	w1.until("got:gamma")
	if strings.Contains(w1.seen.String(), "beta") {
		t.Fatalf("a read-only viewer's input reached the terminal: %q", w1.seen.String())
	}
	w1.send(ipc.TermFrameDetach, nil)
	if _, err := w1.fr.Next(); err == nil {
		// Frames already on the way may come first; the stream must end.
		for err == nil {
			_, err = w1.fr.Next()
		}
	}
	waitFor(t, 5*time.Second, "the writer's slot to free", func() bool {
		st, err := h.Status(ctx)
		return err == nil && !st.Writer && st.Viewers == 2
	})
	w2 := openStream(t, h, false)
	w2.send(ipc.TermFrameData, []byte("delta\r"))
	w2.until("got:delta")
}

// A viewer that stops reading never holds up the child or other viewers:
// the child writes far more than any queue holds and ends, the reading
// viewer sees it all through to the exit.
func TestSlowViewer(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `read go; i=0; while [ $i -lt 4000 ]; do echo "line $i of the flood, padded to make it longer than it needs to be"; i=$((i+1)); done; echo FLOOD-DONE; read x`)
	h := startHolder(t, spec)
	stuck := openStream(t, h, true) // never read from again
	stuck.until("")
	reader := openStream(t, h, false)
	reader.until("")
	reader.send(ipc.TermFrameData, []byte("go\r"))
	reader.until("FLOOD-DONE")
	// The stuck viewer is still attached, and the child still answers.
	st, err := h.Status(context.Background())
	if err != nil || st.Viewers != 2 {
		t.Fatalf("status %+v, %v", st, err)
	}
	reader.send(ipc.TermFrameData, []byte("\r"))
	f := reader.until("never printed")
	if f.Type != ipc.TermFrameExited {
		t.Fatalf("got %s, want the exit", f.Type)
	}
	var ex ipc.TermExit
	if err := json.Unmarshal(f.Payload, &ex); err != nil || ex.Code != 0 {
		t.Fatalf("exit frame %s: %v", f.Payload, err)
	}
	// The stuck viewer, reading at last, gets a repaint or the tail and
	// the stream ends: its frames were dropped, not queued without limit.
	var got int
	_ = stuck.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := stuck.fr.Next()
		if err != nil {
			break
		}
		got += len(f.Payload)
	}
	if got > 2*maxViewerQueue {
		t.Fatalf("the stuck viewer got %d bytes; its queue holds at most %d", got, maxViewerQueue)
	}
}

// TestLaggedViewerCatchesUp: a viewer that stops reading during a flood
// far bigger than its queue falls behind; reading again once the flood is
// over, with no more output to come, it is repainted and sees the end.
func TestLaggedViewerCatchesUp(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `read go; i=0; while [ $i -lt 40000 ]; do echo "line $i of the flood, padded to make it longer than it needs to be"; i=$((i+1)); done; echo FLOOD-DONE; read x`)
	h := startHolder(t, spec)
	stuck := openStream(t, h, true)
	stuck.until("")
	if err := h.Send(context.Background(), "go", true); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, "FLOOD-DONE")
	stuck.until("FLOOD-DONE")
}

// Window sizes: 0 is refused with a clear error, 65535 is clamped, the
// child sees the size applied; a bad size over the stream is a notice and
// the stream goes on.
func TestWindowSizes(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `while read line; do echo "size:$(stty size)"; done`)
	h := startHolder(t, spec)
	ctx := context.Background()
	if _, err := h.Resize(ctx, 0, 24); !errors.Is(err, ipc.ErrTermSize) || !strings.Contains(err.Error(), "at least 1") {
		t.Fatalf("resize to 0x24: %v", err)
	}
	size, err := h.Resize(ctx, 65535, 65535)
	if err != nil || size != (ipc.TermSize{Cols: ipc.MaxTermCols, Rows: ipc.MaxTermRows}) {
		t.Fatalf("resize to 65535x65535: %v, %v", size, err)
	}
	_ = h.Send(ctx, "", true)
	waitScreen(t, h, "size:256 512")

	w := openStream(t, h, false)
	w.send(ipc.TermFrameResize, ipc.EncodeTermSize(ipc.TermSize{Cols: 0, Rows: 0}))
	f := w.until("never printed")
	if f.Type != ipc.TermFrameError || !strings.Contains(string(f.Payload), "at least 1") {
		t.Fatalf("got %s %s, want an error about the size", f.Type, f.Payload)
	}
	w.send(ipc.TermFrameResize, ipc.EncodeTermSize(ipc.TermSize{Cols: 100, Rows: 30}))
	w.send(ipc.TermFrameData, []byte("\r"))
	w.until("size:30 100")
	scr, _ := h.Screen(ctx, 0)
	if scr.Size != (ipc.TermSize{Cols: 100, Rows: 30}) {
		t.Fatalf("screen size %v", scr.Size)
	}
	// A malformed resize frame ends the stream with an error.
	w.send(ipc.TermFrameResize, []byte{1})
	if f := w.until("never printed"); f.Type != ipc.TermFrameError {
		t.Fatalf("got %s after a malformed resize", f.Type)
	}
}

// A child that closes its terminal neither ends the holder nor makes it
// spin; its exit is still recorded.
func TestChildClosesTerminal(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `echo closing; exec 0<&- 1>&- 2>&-; sleep 1; : > slept; sleep 0.2; exit 7`)
	h := startHolder(t, spec)
	waitScreen(t, h, "closing")
	before := cpuTicks(t, h.Info().HolderPID)
	waitFor(t, 10*time.Second, "the child to sleep a second", func() bool {
		_, err := os.Stat(filepath.Join(spec.Dir, "slept"))
		return err == nil
	})
	// A holder spinning on a closed terminal would have burnt a full
	// second of CPU by now (100 ticks).
	if used := cpuTicks(t, h.Info().HolderPID) - before; used > 30 {
		t.Fatalf("the holder used %d ticks of CPU while the child slept", used)
	}
	if ex := waitExit(t, h); ex.Code != 7 {
		t.Fatalf("exit %s, want code 7", ex)
	}
}

// A command that ends at once still starts: Start returns, Wait says how it
// ended.
func TestQuickExit(t *testing.T) {
	for range 5 {
		spec := testSpec(t, "/bin/sh", "-c", "exit 2")
		h := startHolder(t, spec)
		if ex := waitExit(t, h); ex.Code != 2 {
			t.Fatalf("exit %s, want code 2", ex)
		}
	}
}

// A child killed by a signal is recorded as such.
func TestExitBySignal(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `echo ready; kill -TERM $$; sleep 5`)
	h := startHolder(t, spec)
	ex := waitExit(t, h)
	if ex.Signal != "SIGTERM" || ex.Code != -1 {
		t.Fatalf("exit %+v, want killed by SIGTERM", ex)
	}
	if ex.String() != "killed by SIGTERM" {
		t.Fatalf("exit says %q", ex)
	}
}

// A holder killed by SIGKILL is reported as dead: the socket refuses and no
// exit was recorded. Its child gets the hang-up.
func TestHolderKilled(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `trap 'exit 9' HUP; echo up; while :; do sleep 0.1; done`)
	h := startHolder(t, spec)
	waitScreen(t, h, "up")
	info := h.Info()
	if err := syscall.Kill(info.HolderPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "holder to die", func() bool { return !alive(info.HolderPID) })
	ctx := context.Background()
	if _, err := h.Status(ctx); !errors.Is(err, ErrHolderDied) {
		t.Fatalf("status of a killed holder: %v, want ErrHolderDied", err)
	}
	if _, err := h.Wait(ctx); !errors.Is(err, ErrHolderDied) {
		t.Fatalf("wait on a killed holder: %v, want ErrHolderDied", err)
	}
	if _, _, err := h.Attach(ctx, false); !errors.Is(err, ErrHolderDied) {
		t.Fatalf("attach to a killed holder: %v, want ErrHolderDied", err)
	}
	if _, err := Connect(ctx, spec.SessionDir); !errors.Is(err, ErrHolderDied) {
		t.Fatalf("connect to a killed holder: %v, want ErrHolderDied", err)
	}
	waitFor(t, 5*time.Second, "the child to go with the hang-up", func() bool { return !alive(info.ChildPID) })
}

// A holder survives stray signals (an admin's pkill, a cgroup told to
// stop) so that it can still record how its child ends.
func TestHolderIgnoresStraySignals(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `trap '' INT; echo up; read x; exit 5`)
	h := startHolder(t, spec)
	waitScreen(t, h, "up")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		if err := syscall.Kill(h.Info().HolderPID, sig); err != nil {
			t.Fatal(err)
		}
	}
	// Signals are asynchronous: a status answered after a round trip that
	// follows them shows the holder lived through them.
	for range 3 {
		if _, err := h.Status(context.Background()); err != nil {
			t.Fatalf("after stray signals: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = h.Send(context.Background(), "", true)
	if ex := waitExit(t, h); ex.Code != 5 {
		t.Fatalf("exit %s, want code 5", ex)
	}
}

// A holder whose context ends hangs up its terminal and still records how
// the child ended. (The test holder's context ends on SIGUSR1.)
func TestHolderContextHangsUp(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `trap 'echo hung up; exit 5' HUP; echo up; while :; do sleep 0.1; done`)
	h := startHolder(t, spec)
	waitScreen(t, h, "up")
	if err := syscall.Kill(h.Info().HolderPID, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if ex := waitExit(t, h); ex.Code != 5 {
		t.Fatalf("exit %s, want code 5 from the hang-up trap", ex)
	}
	log, _ := os.ReadFile(spec.LogPath)
	if !strings.Contains(string(log), "hung up") {
		t.Fatalf("log %q", log)
	}
}

// Start refuses a bad spec, and reports a command that cannot start
// without leaving a holder behind.
func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	bad := testSpec(t, "true")
	bad.Size = ipc.TermSize{Cols: 0, Rows: 5}
	if _, err := Start(ctx, bad, holderOptions()); !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "size") {
		t.Fatalf("size 0x5: %v", err)
	}
	missing := testSpec(t, "no-such-command-here")
	_, err := Start(ctx, missing, holderOptions())
	if err == nil || !strings.Contains(err.Error(), "no-such-command-here") || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing command: %v", err)
	}
	if _, err := os.Stat(filepath.Join(missing.SessionDir, SocketName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
	// A second holder for a live one's directory is refused.
	spec := testSpec(t, "/bin/sh", "-c", "read x")
	h := startHolder(t, spec)
	if _, err := Start(ctx, spec, holderOptions()); err == nil || !strings.Contains(err.Error(), "already serves") {
		t.Fatalf("second holder: %v", err)
	}
	_ = h.Send(ctx, "", true)
	waitExit(t, h)
}

// A new viewer first gets the screen repainted, then live output.
func TestAttachRepaints(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `printf '\033[31mred words\033[0m\n'; echo plain; read x; echo after`)
	h := startHolder(t, spec)
	waitScreen(t, h, "plain")
	v := openStream(t, h, false)
	v.until("plain")
	first := v.seen.String()
	if !strings.HasPrefix(first, "\x1b[0m") || !strings.Contains(first, "\x1b[2J") || !strings.Contains(first, "red words") {
		t.Fatalf("repaint %q", first)
	}
	if !strings.Contains(first, "31m") {
		t.Fatalf("repaint lost the colour: %q", first)
	}
	v.send(ipc.TermFrameData, []byte("\r"))
	v.until("after")
	f := v.until("never printed")
	if f.Type != ipc.TermFrameExited {
		t.Fatalf("got %s, want the exit", f.Type)
	}
}

// The screen call carries the scrollback when asked.
func TestScreenScrollback(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `i=1; while [ $i -le 100 ]; do echo "row $i"; i=$((i+1)); done; read x`)
	spec.Size = ipc.TermSize{Cols: 40, Rows: 10}
	h := startHolder(t, spec)
	waitScreen(t, h, "row 100")
	scr, err := h.Screen(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(scr.Scrollback) < 90 || scr.Scrollback[0] != "row 1" {
		t.Fatalf("scrollback of %d lines starting %q", len(scr.Scrollback), scr.Scrollback[:min(3, len(scr.Scrollback))])
	}
	all := append(append([]string{}, scr.Scrollback...), scr.Lines...)
	joined := strings.Join(all, "\n")
	if !strings.Contains(joined, "row 50\nrow 51\n") {
		t.Fatalf("history has a gap: %q", joined)
	}
	_ = h.Send(context.Background(), "", true)
	waitExit(t, h)
}

// The log is capped and rotated exactly by the holder.
func TestHolderLogRotation(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `i=0; while [ $i -lt 2000 ]; do echo "log line $i"; i=$((i+1)); done`)
	spec.LogMaxSize = 4096
	spec.LogKeep = 2
	h := startHolder(t, spec)
	waitExit(t, h)
	for _, p := range []string{spec.LogPath, spec.LogPath + ".1", spec.LogPath + ".2"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Size() > spec.LogMaxSize {
			t.Fatalf("%s: %v, size over the cap?", p, err)
		}
	}
	if _, err := os.Stat(spec.LogPath + ".3"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a third rotated log exists: %v", err)
	}
	log, _ := os.ReadFile(spec.LogPath)
	if !strings.HasSuffix(string(log), "log line 1999\r\n") {
		t.Fatalf("the current log does not end with the last line: %q", log[max(0, len(log)-40):])
	}
}

// Only the holder's own user and root get in, whatever the socket's mode.
func TestPeerCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a client as another user needs root")
	}
	spec := testSpec(t, "/bin/sh", "-c", "read x")
	h := startHolder(t, spec)
	sock := filepath.Join(spec.SessionDir, SocketName)
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v", fi.Mode(), err)
	}
	// Open the way to the socket, so that only the credential check stands
	// between another user and the holder.
	bin := copyTestBinary(t)
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(spec.SessionDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"TERMTEST_MODE=dial", "TERMTEST_SOCKET=" + sock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "error") || !strings.Contains(string(out), ipc.TermErrForbidden) {
		t.Fatalf("another user got: %s", out)
	}
	// The holder's own user still gets in.
	if _, err := h.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = h.Send(context.Background(), "", true)
	waitExit(t, h)
}

// copyTestBinary puts a copy of the test binary where any user can run it.
func copyTestBinary(t *testing.T) string {
	t.Helper()
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "term.test")
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Malformed requests get a clear error and do not upset the holder.
func TestBadRequests(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", "read x")
	h := startHolder(t, spec)
	sock := filepath.Join(spec.SessionDir, SocketName)
	for _, tc := range []struct {
		name string
		send func(c net.Conn)
		want string
	}{
		{"data first", func(c net.Conn) { _ = ipc.WriteTermFrame(c, ipc.TermFrameData, []byte("x")) }, "first frame must be a hello"},
		{"unknown op", func(c net.Conn) { _ = ipc.WriteTermJSON(c, ipc.TermFrameHello, ipc.TermRequest{Op: "dance"}) }, "unknown op"},
		{"bad json", func(c net.Conn) { _ = ipc.WriteTermFrame(c, ipc.TermFrameHello, []byte("{")) }, "hello payload"},
		{"empty send", func(c net.Conn) { _ = ipc.WriteTermJSON(c, ipc.TermFrameHello, ipc.TermRequest{Op: ipc.TermOpSend}) }, "nothing to send"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tc.send(c)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			f, err := ipc.ReadTermFrame(c)
			if err != nil || f.Type != ipc.TermFrameError || !strings.Contains(string(f.Payload), tc.want) {
				t.Fatalf("got %v %s, %v; want an error containing %q", f.Type, f.Payload, err, tc.want)
			}
		})
	}
	// Garbage that is not a frame at all just closes the connection.
	c, _ := net.Dial("unix", sock)
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := ipc.ReadTermFrame(c); err == nil {
		t.Fatal("an HTTP request got a frame back")
	}
	c.Close()
	if _, err := h.Status(context.Background()); err != nil {
		t.Fatalf("the holder after bad requests: %v", err)
	}
	_ = h.Send(context.Background(), "", true)
	waitExit(t, h)
}
