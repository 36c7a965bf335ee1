package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/term"
	"github.com/sessiond/sessiond/ipc"
	"go.uber.org/zap"
)

// terminalOf returns the holder of a live tty session the caller may use,
// or an error that says why there is none and what to do instead.
func (d *Service) terminalOf(c ipc.Caller, id string) (*session.Session, *term.Holder, error) {
	s, err := d.reg.Lookup(c, id)
	if err != nil {
		return nil, nil, err
	}
	h, err := s.Terminal()
	if err != nil {
		return s, nil, terminalError(s, err)
	}
	return s, h, nil
}

// terminalError turns what went wrong with a session's terminal into an
// API error a user can act on.
func terminalError(s *session.Session, err error) error {
	id := s.ID()
	var exited *term.ExitedError
	switch {
	case errors.Is(err, session.ErrNoTerminal) && !s.Snapshot().TTY && !specOnTerminal(s):
		return ipc.Conflict("session %s has no terminal (it was started without tty); follow its output with: sessionctl logs -f %s", id, id)
	case errors.Is(err, session.ErrEnded), errors.As(err, &exited):
		rec := s.Snapshot()
		return ipc.Conflict("session %s has ended (%s): its terminal is gone; see sessionctl screen %s for its last screen, and sessionctl logs %s", id, endWords(rec), id, id)
	case errors.Is(err, term.ErrWriterTaken):
		return ipc.Conflict("session %s: %v", id, err)
	case errors.Is(err, term.ErrHolderDied):
		return ipc.Conflict("session %s: its terminal holder has died; the session ends as crashed (see sessionctl handoff %s)", id, id)
	case errors.Is(err, session.ErrNoTerminal):
		return ipc.Conflict("%v; try again in a moment", err)
	}
	var te *ipc.TermError
	var he *term.HolderError
	if errors.As(err, &he) && he.Code == ipc.TermErrBusy {
		return ipc.Conflict("session %s: %s", id, he.Message)
	}
	if errors.As(err, &he) || errors.As(err, &te) || errors.Is(err, ipc.ErrTermSize) {
		return ipc.BadRequest("session %s: %w", id, err)
	}
	return fmt.Errorf("session %s: terminal: %w", id, err)
}

// endWords says how an ended session ended, for a message.
func endWords(rec ipc.Session) string {
	if !ipc.Live(rec.State) && rec.EndReason == "" {
		return rec.State
	}
	switch {
	case rec.Signal != "":
		return fmt.Sprintf("%s, %s", rec.EndReason, rec.Signal)
	case rec.ExitCode != nil:
		return fmt.Sprintf("%s, exit code %d", rec.EndReason, *rec.ExitCode)
	case rec.EndReason != "":
		return rec.EndReason
	}
	return "its command exited"
}

// SessionScreen implements ipc.Terminals: the screen now, or for an ended
// session the screen its command left.
func (d *Service) SessionScreen(ctx context.Context, c ipc.Caller, id string, opt ipc.ScreenOptions) (*ipc.TermScreen, error) {
	s, err := d.reg.Lookup(c, id)
	if err != nil {
		return nil, err
	}
	final := func(cause error) (*ipc.TermScreen, error) {
		scr, ferr := s.FinalScreen()
		if ferr != nil {
			return nil, terminalError(s, cause)
		}
		scr.Scrollback = lastLines(scr.Scrollback, opt.Scrollback)
		return &scr, nil
	}
	h, err := s.Terminal()
	if errors.Is(err, session.ErrEnded) {
		return final(err)
	}
	if err != nil {
		return nil, terminalError(s, err)
	}
	scr, err := h.Screen(ctx, opt.Scrollback)
	if err != nil {
		// The command ended between the two questions.
		return final(err)
	}
	return &scr, nil
}

func lastLines(lines []string, n int) []string {
	if n <= 0 {
		return nil
	}
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// SendSession implements ipc.Terminals. sessiond itself never types into
// a session: this is a person's (or their script's) request.
func (d *Service) SendSession(ctx context.Context, c ipc.Caller, id string, req ipc.SendRequest) error {
	s, h, err := d.terminalOf(c, id)
	if err != nil {
		return err
	}
	if err := h.Send(ctx, req.Text, req.Enter); err != nil {
		return terminalError(s, err)
	}
	return nil
}

// AttachSession implements ipc.Terminals: a connection to the session's
// holder, attached, which the server splices to the caller's.
func (d *Service) AttachSession(ctx context.Context, c ipc.Caller, id string, opt ipc.AttachOptions) (io.ReadWriteCloser, *ipc.TermStatus, error) {
	s, h, err := d.terminalOf(c, id)
	if err != nil {
		return nil, nil, err
	}
	conn, st, err := h.Attach(ctx, opt.ReadOnly)
	if err != nil {
		return nil, nil, terminalError(s, err)
	}
	d.log.Info("viewer attached", zap.String("session", s.ID()), zap.Int("uid", c.UID), zap.Int("pid", c.PID), zap.Bool("read_only", opt.ReadOnly))
	return conn, &st, nil
}

func specOnTerminal(s *session.Session) bool {
	sp := s.Spec()
	return sp.OnTerminal()
}
