package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/agent"
	"github.com/sessiond/sessiond/daemon/logfile"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/term"
	"github.com/sessiond/sessiond/ipc"
)

// resolveTerminal settles, at a start, whether the command runs on a
// terminal: as the spec's tty says when it is set, else on one when the
// command is an agent that a person talks to there (claude without -p,
// codex without exec), whose interface needs a terminal to run at all —
// even with agent = "none", which leaves out only the integration.
func resolveTerminal(spec *config.Spec) {
	setting := spec.Agent
	if setting == agent.SettingNone {
		setting = agent.SettingAuto
	}
	interactive := false
	if a, err := agent.Detect(setting, spec.Command); err == nil {
		interactive = a.Interactive(spec.Command)
	}
	if spec.TerminalWanted(interactive) {
		tty := true
		spec.TTY = &tty
	}
}

// WatchTerminalLog implements the session's terminal log watcher: the log
// of a tty session is written and rotated (by renaming) by its holder, so
// the daemon watches the session's directory for writes to it, which
// follow the log across its renames, and never rotates it itself.
func (o *outputWatcher) WatchTerminalLog(path string, onWrite func(time.Time)) (unwatch func()) {
	l := &watchedLog{path: path, onWrite: onWrite, changed: make(chan struct{})}
	o.mu.Lock()
	o.logs[path] = l
	o.mu.Unlock()
	dir := filepath.Dir(path)
	if err := o.w.Add(dir); err != nil {
		o.log.Warn("cannot watch a terminal log; idle detection sees file activity only", zap.String("path", path), zap.Error(err))
	}
	// The command runs before its log is watched, and may have written
	// already (a prompt, then a wait for input): that counts too.
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		onWrite(fi.ModTime())
		l.wake()
	}
	return func() {
		o.mu.Lock()
		if o.logs[path] == l {
			delete(o.logs, path)
		}
		o.mu.Unlock()
		_ = o.w.Remove(dir)
		l.wake()
	}
}

// terminalLogs is SessionLogs for a tty session: its log, rotated by its
// holder, as text (control sequences stripped) unless opt.Raw, and with
// opt.Follow what is written next, until the session ends. Times are not
// kept for it: the stamps are the daemon's rotator's, which a terminal
// log does not have.
func (d *Daemon) terminalLogs(ctx context.Context, s *session.Session, opt ipc.LogOptions, w io.Writer) error {
	if timedLogs(opt) {
		return ipc.Conflict("session %s runs on a terminal, whose log its holder writes and the daemon keeps no times for: leave out -t, --since and --until", s.ID())
	}
	keep := d.cfg.LogKeep
	if keep <= 0 {
		keep = logfile.DefaultKeep
	}
	r, err := logfile.OpenRenamed(s.LogPath(), keep, opt.Tail)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if !opt.Raw {
		st := term.NewStripper(w)
		defer func() { _ = st.Flush() }()
		w = st
	}
	buf := make([]byte, 32*1024)
	for {
		changed := d.out.changes(s.LogPath())
		if _, err := io.CopyBuffer(w, r, buf); err != nil {
			return err
		}
		if !opt.Follow {
			return nil
		}
		var poll <-chan time.Time
		if changed == nil {
			// Nobody watches the log yet or any more: look again shortly.
			poll = time.After(100 * time.Millisecond)
		}
		select {
		case <-changed:
		case <-poll:
		case <-s.Done():
			_, err := io.CopyBuffer(w, r, buf)
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// terminalOf returns the holder of a live tty session the caller may use,
// or an error that says why there is none and what to do instead.
func (d *Daemon) terminalOf(c ipc.Caller, id string) (*session.Session, *term.Holder, error) {
	s, err := d.reg.lookup(c, id)
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
func (d *Daemon) SessionScreen(ctx context.Context, c ipc.Caller, id string, opt ipc.ScreenOptions) (*ipc.TermScreen, error) {
	s, err := d.reg.lookup(c, id)
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
func (d *Daemon) SendSession(ctx context.Context, c ipc.Caller, id string, req ipc.SendRequest) error {
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
func (d *Daemon) AttachSession(ctx context.Context, c ipc.Caller, id string, opt ipc.AttachOptions) (io.ReadWriteCloser, *ipc.TermStatus, error) {
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
	spec := s.Spec()
	return spec.OnTerminal()
}
