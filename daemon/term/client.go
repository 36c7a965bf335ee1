package term

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// defaultTimeout bounds a request whose context has no deadline (attach
// streams and Wait are bounded by their context alone).
const defaultTimeout = 10 * time.Second

// StartOptions says how Start runs the holder process.
type StartOptions struct {
	// Executable is the holder's program; empty means sessiond-holder
	// beside this program, else this program (holderCommand).
	Executable string
	// Args select the holder mode; nil means ["holder"] for sessiond and
	// none for sessiond-holder.
	Args []string
	// Env is the holder's own environment, only GOMAXPROCS=1 by default:
	// the command's environment travels in the Spec, and the holder needs
	// none.
	Env []string
}

// Holder is the daemon's handle on the holder of one session's terminal.
// It holds no connection: each call dials the holder's socket, so a handle
// costs nothing between calls and is safe for concurrent use.
type Holder struct {
	dir  string
	info Info
}

// Dir is the session directory the holder serves.
func (h *Holder) Dir() string { return h.dir }

// Info is the holder's record: its pid and its child's, with start times.
func (h *Holder) Info() Info { return h.info }

// Start runs a holder for spec and returns once its socket answers. The
// holder runs in a session of its own: the daemon's end (even by SIGKILL)
// leaves it running.
func Start(ctx context.Context, spec Spec, opt StartOptions) (*Holder, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	payload, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode terminal spec: %w", err)
	}
	exe, args := opt.Executable, opt.Args
	if exe == "" {
		var found []string
		if exe, found, err = selfHolder(); err != nil {
			return nil, err
		}
		if args == nil {
			args = found
		}
	} else if args == nil {
		args = []string{"holder"}
	}
	if err := state.EnsureDir(spec.SessionDir); err != nil {
		return nil, err
	}
	diagPath := filepath.Join(spec.SessionDir, DiagName)
	diag, err := os.OpenFile(diagPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open terminal holder log: %w", err)
	}
	defer diag.Close()

	cmd := exec.Command(exe, args...)
	cmd.Dir = "/"
	// The holder runs on one P (tuneRuntime); told so before its runtime
	// starts, it never makes the second P's caches, some 70 KiB it would
	// keep for its whole life.
	cmd.Env = append([]string{"GOMAXPROCS=1"}, opt.Env...)
	cmd.Stderr = diag
	// A session of its own: no signal for the daemon's process group or
	// terminal reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start terminal holder: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start terminal holder: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start terminal holder %s: %w", exe, err)
	}
	holderPID := cmd.Process.Pid
	reapLater(cmd.Process)

	info, err := handshake(ctx, stdin, stdout.(*os.File), payload)
	if err != nil {
		// A holder that did not get as far as serving is of no use; its
		// child, if any, goes with it.
		if rec, rerr := ReadInfo(spec.SessionDir); rerr == nil && rec.HolderPID == holderPID {
			_ = proc.Process{PID: rec.ChildPID, Start: rec.ChildStart, Ino: rec.ChildIno}.SignalGroup(syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("start terminal holder for %s: %w", spec.SessionDir, err)
	}
	h := &Holder{dir: spec.SessionDir, info: info}
	// A command that ends at once may take its holder along before the
	// socket is asked: it did start, and Wait will say how it ended.
	if _, err := h.Status(ctx); err != nil && !errors.Is(err, ErrExited) {
		return nil, fmt.Errorf("start terminal holder for %s: its socket does not answer: %w", spec.SessionDir, err)
	}
	return h, nil
}

// handshake hands the spec over and reads the holder's ready line.
func handshake(ctx context.Context, stdin io.WriteCloser, stdout *os.File, spec []byte) (Info, error) {
	defer stdout.Close()
	if _, err := stdin.Write(spec); err != nil {
		stdin.Close()
		return Info{}, fmt.Errorf("hand the spec over: %w", err)
	}
	if err := stdin.Close(); err != nil {
		return Info{}, fmt.Errorf("hand the spec over: %w", err)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultTimeout)
	}
	_ = stdout.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = stdout.SetReadDeadline(time.Now()) })
	defer stop()
	line, err := readLine(stdout, 64<<10)
	if ctx.Err() != nil {
		return Info{}, ctx.Err()
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Info{}, errors.New("the holder exited before it was ready (see " + DiagName + ")")
		}
		return Info{}, fmt.Errorf("read the holder's ready line: %w", err)
	}
	var r ready
	if err := json.Unmarshal(line, &r); err != nil {
		return Info{}, fmt.Errorf("read the holder's ready line: %w", err)
	}
	if r.Error != "" {
		return Info{}, errors.New(r.Error)
	}
	if r.Info == nil {
		return Info{}, errors.New("the holder's ready line has no info")
	}
	return *r.Info, nil
}

// readLine reads up to the first newline, at most max bytes.
func readLine(r io.Reader, max int) ([]byte, error) {
	var buf []byte
	chunk := make([]byte, 4096)
	for len(buf) < max {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return buf[:i], nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no newline in the first %d bytes", max)
}

// Connect finds the holder of a session directory again, after a daemon
// restart. It fails with an *ExitedError when the child has ended (the
// holder recorded how), with ErrHolderDied when the holder is gone without
// a record, and with ErrNoHolder when the directory never had one.
func Connect(ctx context.Context, dir string) (*Holder, error) {
	info, err := ReadInfo(dir)
	if err != nil {
		return nil, err
	}
	h := &Holder{dir: dir, info: info}
	st, err := h.Status(ctx)
	if err != nil {
		return nil, err
	}
	if st.ChildPID != info.ChildPID || st.HolderPID != info.HolderPID {
		return nil, fmt.Errorf("terminal holder of %s answers for pid %d, but its record says %d", dir, st.ChildPID, info.ChildPID)
	}
	return h, nil
}

// Status asks the holder about itself.
func (h *Holder) Status(ctx context.Context) (ipc.TermStatus, error) {
	var st ipc.TermStatus
	err := h.roundTrip(ctx, ipc.TermRequest{Op: ipc.TermOpStatus}, &st)
	return st, err
}

// Screen returns what the terminal shows now, with up to scrollback lines
// of history above it.
func (h *Holder) Screen(ctx context.Context, scrollback int) (ipc.TermScreen, error) {
	var scr ipc.TermScreen
	err := h.roundTrip(ctx, ipc.TermRequest{Op: ipc.TermOpScreen, Scrollback: scrollback}, &scr)
	return scr, err
}

// Send types text into the terminal, followed by a carriage return (the
// Enter key) when enter is set.
func (h *Holder) Send(ctx context.Context, text string, enter bool) error {
	var ok struct{}
	return h.roundTrip(ctx, ipc.TermRequest{Op: ipc.TermOpSend, Text: text, Enter: enter}, &ok)
}

// Resize sets the window size and returns the size applied (sizes above
// ipc.MaxTermCols or ipc.MaxTermRows are clamped; 0 is refused).
func (h *Holder) Resize(ctx context.Context, cols, rows int) (ipc.TermSize, error) {
	if _, err := ipc.CheckTermSize(cols, rows); err != nil {
		return ipc.TermSize{}, err
	}
	var size ipc.TermSize
	err := h.roundTrip(ctx, ipc.TermRequest{Op: ipc.TermOpResize, Size: ipc.TermSize{Cols: cols, Rows: rows}}, &size)
	return size, err
}

// Attach opens a viewer's stream: the returned connection carries the
// terminal stream as package ipc frames it, starting with a repaint of the
// screen, and can be spliced to a client as it is. ctx bounds the
// handshake only. A second writer gets ErrWriterTaken.
func (h *Holder) Attach(ctx context.Context, readOnly bool) (net.Conn, ipc.TermStatus, error) {
	var st ipc.TermStatus
	c, err := h.dial(ctx)
	if err != nil {
		return nil, st, err
	}
	if err := h.exchange(ctx, c, ipc.TermRequest{Op: ipc.TermOpAttach, ReadOnly: readOnly}, &st); err != nil {
		c.Close()
		return nil, st, err
	}
	return c, st, nil
}

// Wait blocks until the terminal's command has ended and returns how, or
// until ctx is done. It fails with ErrHolderDied when the holder is gone
// without recording the exit.
func (h *Holder) Wait(ctx context.Context) (ipc.TermExit, error) {
	if ex, err := ReadExit(h.dir); err == nil {
		return ex, nil
	}
	ex, err := h.wait(ctx)
	if err == nil {
		return ex, nil
	}
	if ctx.Err() != nil {
		return ipc.TermExit{}, ctx.Err()
	}
	// The holder ends right after it records the exit: a connection that
	// broke, or a holder gone, may still have left the record.
	var ee *ExitedError
	if errors.As(err, &ee) {
		return ee.Exit, nil
	}
	if errors.As(h.explain(err), &ee) {
		return ee.Exit, nil
	}
	return ipc.TermExit{}, h.explain(err)
}

func (h *Holder) wait(ctx context.Context) (ipc.TermExit, error) {
	c, err := h.dial(ctx)
	if err != nil {
		return ipc.TermExit{}, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	var ex ipc.TermExit
	err = h.exchange(context.Background(), c, ipc.TermRequest{Op: ipc.TermOpWait}, &ex)
	return ex, err
}

// roundTrip sends one request and decodes the answer into out.
func (h *Holder) roundTrip(ctx context.Context, req ipc.TermRequest, out any) error {
	c, err := h.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := h.exchange(ctx, c, req, out); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return h.explain(err)
		}
		return err
	}
	return nil
}

// exchange writes the hello and reads the answer, without reading a byte
// past it (an attach stream follows).
func (h *Holder) exchange(ctx context.Context, c net.Conn, req ipc.TermRequest, out any) error {
	deadline, ok := ctx.Deadline()
	if !ok && req.Op != ipc.TermOpWait {
		deadline = time.Now().Add(defaultTimeout)
	}
	_ = c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	if err := ipc.WriteTermJSON(c, ipc.TermFrameHello, req); err != nil {
		return fmt.Errorf("terminal holder of %s: send %s request: %w", h.dir, req.Op, err)
	}
	f, err := ipc.ReadTermFrame(c)
	if err != nil {
		return fmt.Errorf("terminal holder of %s: read %s answer: %w", h.dir, req.Op, err)
	}
	switch f.Type {
	case ipc.TermFrameOK:
		if err := ipc.DecodeTermJSON(f, out); err != nil {
			return fmt.Errorf("terminal holder of %s: %w", h.dir, err)
		}
		return nil
	case ipc.TermFrameError:
		var te ipc.TermError
		if err := ipc.DecodeTermJSON(f, &te); err != nil {
			return fmt.Errorf("terminal holder of %s: %w", h.dir, err)
		}
		return errorFromFrame(te, h.dir)
	}
	return fmt.Errorf("terminal holder of %s: %w: %s frame in answer to %s", h.dir, ipc.ErrTermFrame, f.Type, req.Op)
}

// dial connects to the holder's socket; when that fails it says why in
// the terms callers branch on.
func (h *Holder) dial(ctx context.Context) (net.Conn, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", filepath.Join(h.dir, SocketName))
	if err != nil {
		return nil, h.explain(err)
	}
	return c, nil
}

// explain turns a failure to reach the holder into ExitedError when the
// exit is recorded, ErrHolderDied when the holder is gone without one, and
// otherwise the error itself.
func (h *Holder) explain(err error) error {
	if ex, rerr := ReadExit(h.dir); rerr == nil {
		return &ExitedError{Exit: ex}
	} else if !errors.Is(rerr, fs.ErrNotExist) {
		return fmt.Errorf("terminal holder of %s: %w (and %v)", h.dir, err, rerr)
	}
	if !proc.Alive(h.info.HolderPID, h.info.HolderStart) {
		return fmt.Errorf("terminal holder %d of %s: %w", h.info.HolderPID, h.dir, ErrHolderDied)
	}
	return fmt.Errorf("terminal holder %d of %s is running but does not answer: %w", h.info.HolderPID, h.dir, err)
}
