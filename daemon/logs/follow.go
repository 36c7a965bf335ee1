package logs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/logfile"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/term"
	"github.com/sessiond/sessiond/ipc"
)

// Sessions finds the session a request names (the registry).
type Sessions interface {
	Lookup(c ipc.Caller, ref string) (*session.Session, error)
}

// Service is the logs API (ipc.Logs): a session's output as its log
// holds it, from the watcher that sees it written.
type Service struct {
	sessions Sessions
	watcher  *Watcher
	log      *zap.Logger
	// keep is log_keep: how many files a terminal log rotates through.
	keep int
}

var _ ipc.Logs = (*Service)(nil)

// NewService returns the logs API over the sessions' logs that w watches.
func NewService(sessions Sessions, w *Watcher, keep int, log *zap.Logger) *Service {
	if keep <= 0 {
		keep = logfile.DefaultKeep
	}
	return &Service{sessions: sessions, watcher: w, keep: keep, log: log}
}

// SessionLogs implements ipc.Logs: the log read across its rotated files,
// from the last opt.Tail lines (0: all that is kept), and with opt.Follow
// what is written next, until the session ends. The log is text (control
// sequences stripped: a user's output never reaches another user's
// terminal raw) unless opt.Raw.
func (l *Service) SessionLogs(ctx context.Context, c ipc.Caller, id string, opt ipc.LogOptions, w io.Writer) error {
	s, err := l.sessions.Lookup(c, id)
	if err != nil {
		return err
	}
	if !opt.Raw {
		st := term.NewStripper(w)
		defer func() { _ = st.Flush() }()
		if rep, ok := w.(ipc.StampsReporter); ok {
			w = reportingWriter{st, rep}
		} else {
			w = st
		}
	}
	if s.Snapshot().TTY {
		return l.terminalLogs(ctx, s, opt, w)
	}
	f, release, err := l.watcher.open(s.LogPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer release()
	if timedLogs(opt) {
		return l.stampedLogs(ctx, s, f, opt, w)
	}
	from := -1
	if opt.Tail > 0 {
		from = opt.Tail
	}
	r, err := f.NewReader(from)
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]byte, 32*1024)
	return l.watcher.follow(ctx, s, opt.Follow, nil, func() (bool, error) {
		_, err := io.CopyBuffer(w, r, buf)
		return false, err
	})
}

// terminalLogs is SessionLogs for a tty session: its log, rotated by its
// holder. Times are not kept for it: the stamps are the daemon's
// rotator's, which a terminal log does not have.
func (l *Service) terminalLogs(ctx context.Context, s *session.Session, opt ipc.LogOptions, w io.Writer) error {
	if timedLogs(opt) {
		return ipc.Conflict("session %s runs on a terminal, whose log its holder writes and the daemon keeps no times for: leave out -t, --since and --until", s.ID())
	}
	r, err := logfile.OpenRenamed(s.LogPath(), l.keep, opt.Tail)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]byte, 32*1024)
	return l.watcher.follow(ctx, s, opt.Follow, nil, func() (bool, error) {
		_, err := io.CopyBuffer(w, r, buf)
		return false, err
	})
}

// followPoll is how often a follower looks at a log nobody watches: one
// whose session is still starting, or is ending.
const followPoll = 100 * time.Millisecond

// follow is the one loop of every log follower: drain sends what the log
// has; with more, it waits for the next write (asked for before the read,
// so that a write between the two is not missed), the session's end (then
// drains once more), until (then drains once more) or ctx, and sends again.
// drain reports whether it is done for good.
func (o *Watcher) follow(ctx context.Context, s *session.Session, more bool, until <-chan time.Time, drain func() (bool, error)) error {
	path := s.LogPath()
	for {
		changed := o.changes(path)
		if done, err := drain(); err != nil || done || !more {
			return err
		}
		var poll <-chan time.Time
		if changed == nil {
			poll = time.After(followPoll)
		}
		select {
		case <-changed:
		case <-poll:
		case <-until:
			_, err := drain()
			return err
		case <-s.Done():
			_, err := drain()
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// reportingWriter is a writer that passes the coverage of the log's times
// on to the stream's own writer.
type reportingWriter struct {
	io.Writer
	ipc.StampsReporter
}
