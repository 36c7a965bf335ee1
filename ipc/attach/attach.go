package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/sessiond/sessiond/ipc"
)

// Reason says why an attach ended.
type Reason int

// Why an attach ends.
const (
	// Detached: the user pressed the detach key; the session goes on.
	Detached Reason = iota + 1
	// Ended: the session's command ended; Result.Exit says how.
	Ended
	// Lost: the stream broke or the context ended; Result.Err says why.
	Lost
)

// String names the reason.
func (r Reason) String() string {
	switch r {
	case Detached:
		return "detached"
	case Ended:
		return "ended"
	case Lost:
		return "connection lost"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Result is how an attach ended.
type Result struct {
	Reason Reason
	// Exit is how the session's command ended, with Reason Ended.
	Exit *ipc.TermExit
	// Err is why the stream broke, with Reason Lost: the read error, or the
	// holder's last error message.
	Err error
}

// Options configures Run. The zero value attaches os.Stdin and os.Stdout as
// a writer with the default detach key.
type Options struct {
	// In and Out are the user's terminal; nil means os.Stdin, os.Stdout.
	In, Out *os.File
	// DetachKey ends the attach; 0 means DefaultDetachKey.
	DetachKey byte
	// ReadOnly forwards neither keystrokes nor window sizes (the holder
	// ignores them from a read-only viewer anyway).
	ReadOnly bool
}

// restoreSeq puts the user's terminal back after the session's program
// may have changed it: attributes, cursor, cursor keys, keypad, mouse,
// focus reports, bracketed paste, the character set, insert mode and
// autowrap. The scroll region and origin mode, whose reset moves the
// cursor, are reset only when the session set them (outputFilter.region).
const restoreSeq = "\x1b[0m\x1b[?25h\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l\x1b[?2004l" +
	"\x1b(B\x0f\x1b[4l\x1b[?7h"

// Run joins the user's terminal to the stream on conn until the user
// detaches, the session's command ends, the stream breaks or ctx is done.
// It returns an error only when it cannot start (the terminal refuses raw
// mode); how the attach ended is in the Result. conn is closed on return.
func Run(ctx context.Context, conn io.ReadWriteCloser, opt Options) (Result, error) {
	defer conn.Close()
	if opt.In == nil {
		opt.In = os.Stdin
	}
	if opt.Out == nil {
		opt.Out = os.Stdout
	}
	if opt.DetachKey == 0 {
		opt.DetachKey = DefaultDetachKey
	}
	// Fd switches a file to blocking mode, on the open file the pollable
	// copy below shares: ask for both once, before that copy exists.
	inFd, outFd := int(opt.In.Fd()), int(opt.Out.Fd())
	if term.IsTerminal(inFd) {
		old, err := term.MakeRaw(inFd)
		if err != nil {
			return Result{}, fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		defer func() { _ = term.Restore(inFd, old) }()
	}
	in, err := pollableInput(inFd)
	if err != nil {
		return Result{}, err
	}
	defer in.close()

	a := &attachment{conn: conn, opt: opt, inFd: inFd, outFd: outFd, done: make(chan struct{})}
	defer func() {
		// Whatever the session's program left set is undone, and an
		// alternate screen it entered is left.
		seq := restoreSeq
		if a.filter.region {
			// Each homes the cursor: on the alternate screen, left
			// next; else the cursor goes to the last line, below what
			// the session drew.
			seq += "\x1b[?6l\x1b[r"
			if !a.alt.on {
				seq += "\x1b[999;1H"
			}
		}
		if a.alt.on {
			seq += "\x1b[?1049l"
		}
		_, _ = io.WriteString(opt.Out, seq)
	}()

	var wg sync.WaitGroup
	if !opt.ReadOnly {
		a.sendSize()
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-winch:
					a.sendSize()
				case <-a.done:
					return
				}
			}
		}()
	}
	wg.Add(2)
	go func() { defer wg.Done(); a.readStream() }()
	go func() { defer wg.Done(); a.readKeys(in) }()

	select {
	case <-a.done:
	case <-ctx.Done():
		a.end(Result{Reason: Lost, Err: ctx.Err()})
	}
	// Unblock the readers: the stream by closing it, the keyboard by a
	// deadline on its pollable copy.
	conn.Close()
	in.interrupt()
	wg.Wait()
	return a.result, nil
}

// attachment is one running attach.
type attachment struct {
	conn        io.ReadWriteCloser
	opt         Options
	inFd, outFd int

	writeMu sync.Mutex

	once   sync.Once
	done   chan struct{}
	result Result

	// Written by readStream only, read after it has ended.
	alt     altTracker
	lastErr error
	filter  outputFilter
	shown   []byte // the filtered output, reused
}

func (a *attachment) end(r Result) {
	a.once.Do(func() {
		a.result = r
		close(a.done)
	})
}

func (a *attachment) send(t ipc.TermFrameType, payload []byte) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	return ipc.WriteTermFrame(a.conn, t, payload)
}

// sendSize sends the terminal's window size; a terminal that reports none
// (or 0, as some do while a window is minimised) sends nothing.
func (a *attachment) sendSize() {
	cols, rows, err := term.GetSize(a.outFd)
	if err != nil {
		cols, rows, err = term.GetSize(a.inFd)
	}
	if err != nil || cols < 1 || rows < 1 {
		return
	}
	_ = a.send(ipc.TermFrameResize, ipc.EncodeTermSize(ipc.TermSize{Cols: cols, Rows: rows}))
}

// readStream copies the session's output to the terminal until the stream
// ends.
func (a *attachment) readStream() {
	fr := ipc.NewTermFrameReader(a.conn)
	for {
		f, err := fr.Next()
		if err != nil {
			if a.lastErr != nil {
				err = a.lastErr
			} else if errors.Is(err, io.EOF) {
				err = errors.New("the stream ended without an exit status")
			}
			a.end(Result{Reason: Lost, Err: err})
			return
		}
		switch f.Type {
		case ipc.TermFrameData:
			a.shown = a.filter.filter(a.shown[:0], f.Payload)
			a.alt.scan(a.shown)
			if _, err := a.opt.Out.Write(a.shown); err != nil {
				a.end(Result{Reason: Lost, Err: fmt.Errorf("write to the terminal: %w", err)})
				return
			}
		case ipc.TermFrameExited:
			var ex ipc.TermExit
			if err := ipc.DecodeTermJSON(f, &ex); err != nil {
				a.end(Result{Reason: Lost, Err: err})
				return
			}
			a.end(Result{Reason: Ended, Exit: &ex})
			return
		case ipc.TermFrameError:
			// A notice (a refused window size, say); if the holder means
			// it to be the end, the stream ends next and this says why.
			var te ipc.TermError
			if err := ipc.DecodeTermJSON(f, &te); err == nil {
				a.lastErr = &te
			}
		default:
			a.end(Result{Reason: Lost, Err: fmt.Errorf("%w: unexpected %s frame in the stream", ipc.ErrTermFrame, f.Type)})
			return
		}
	}
}

// readKeys forwards keystrokes until the detach key.
func (a *attachment) readKeys(in *input) {
	buf := make([]byte, 4096)
	for {
		n, err := in.f.Read(buf)
		if n > 0 {
			keys := buf[:n]
			i := bytes.IndexByte(keys, a.opt.DetachKey)
			if i >= 0 {
				keys = keys[:i]
			}
			if len(keys) > 0 && !a.opt.ReadOnly {
				if err := a.send(ipc.TermFrameData, keys); err != nil {
					a.end(Result{Reason: Lost, Err: err})
					return
				}
			}
			if i >= 0 {
				_ = a.send(ipc.TermFrameDetach, nil)
				a.end(Result{Reason: Detached})
				return
			}
		}
		if err != nil {
			select {
			case <-a.done:
			default:
				if errors.Is(err, io.EOF) {
					// Input ended (not a terminal): keep watching the
					// stream, as a viewer; an empty data frame tells the
					// holder, which lets another viewer be the writer.
					if !a.opt.ReadOnly {
						_ = a.send(ipc.TermFrameData, nil)
					}
					return
				}
				a.end(Result{Reason: Lost, Err: fmt.Errorf("read the terminal: %w", err)})
			}
			return
		}
	}
}

// input is a non-blocking copy of the terminal's fd, read through the
// runtime's poller so that a deadline can stop a pending read when the
// attach ends (a plain read of stdin would hold on, and take the user's
// next keystroke after the attach is over).
type input struct {
	f      *os.File
	fd     int
	wasNon bool
}

func pollableInput(fd int) (*input, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, fmt.Errorf("read the terminal: %w", err)
	}
	unix.CloseOnExec(dup)
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("read the terminal: %w", err)
	}
	// The flag belongs to the open file, which the original fd shares.
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("read the terminal: %w", err)
	}
	return &input{f: os.NewFile(uintptr(dup), "terminal"), fd: fd, wasNon: flags&unix.O_NONBLOCK != 0}, nil
}

func (in *input) interrupt() { _ = in.f.SetReadDeadline(time.Now()) }

// close closes the copy and gives the terminal back in blocking mode, as
// the shell expects to find it.
func (in *input) close() {
	in.f.Close()
	if !in.wasNon {
		_ = unix.SetNonblock(in.fd, false)
	}
}

// altTracker follows whether the session's program has the terminal on its
// alternate screen, so that leaving the attach leaves that screen too.
type altTracker struct {
	on   bool
	tail []byte
}

var (
	altOn  = [][]byte{[]byte("\x1b[?1049h"), []byte("\x1b[?1047h"), []byte("\x1b[?47h")}
	altOff = [][]byte{[]byte("\x1b[?1049l"), []byte("\x1b[?1047l"), []byte("\x1b[?47l")}
)

func (t *altTracker) scan(p []byte) {
	// The end of the last chunk is kept, for a sequence cut in two.
	s := append(t.tail, p...)
	last := func(pats [][]byte) int {
		at := -1
		for _, pat := range pats {
			at = max(at, bytes.LastIndex(s, pat))
		}
		return at
	}
	on, off := last(altOn), last(altOff)
	switch {
	case on > off:
		t.on = true
	case off > on:
		t.on = false
	}
	keep := min(len(s), 7)
	t.tail = append([]byte(nil), s[len(s)-keep:]...)
}
