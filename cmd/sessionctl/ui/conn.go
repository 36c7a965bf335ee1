package ui

import (
	"bufio"
	"context"
	"errors"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sessiond/sessiond/ipc"
)

// conn is the dashboard's side of the daemon's API: each method returns
// the command that makes one request and the message that carries its
// answer back into Update. Streams live until ctx (the dashboard's life)
// ends or they are closed.
type conn struct {
	ctx    context.Context
	client *ipc.Client
}

// requestTimeout bounds every request but the streams and the stop,
// which returns only once the session's end is on disk.
const (
	requestTimeout = 15 * time.Second
	stopTimeout    = 10 * time.Minute
)

// Messages from the daemon.
type (
	// connectedMsg is a new event stream with the sessions listed right
	// after it was opened, so that no change falls between the two.
	connectedMsg struct {
		w        *ipc.EventWatcher
		sessions []ipc.Session
	}
	// offlineMsg is a connection that could not be made.
	offlineMsg struct{ err error }
	// reconnectMsg is the time to try again.
	reconnectMsg struct{}
	// eventMsg is one event of the stream w.
	eventMsg struct {
		w  *ipc.EventWatcher
		ev ipc.Event
	}
	// streamEndedMsg is the end of the event stream w.
	streamEndedMsg struct {
		w   *ipc.EventWatcher
		err error
	}
	// listedMsg is the sessions listed again while the stream w runs,
	// after it missed events.
	listedMsg struct {
		w        *ipc.EventWatcher
		sessions []ipc.Session
		err      error
	}
	// recordMsg is a session's record fetched again after one of its events.
	recordMsg struct {
		id  string
		s   *ipc.Session
		err error
	}
	// handoffMsg is an ended session's handoff.
	handoffMsg struct {
		id  string
		h   *ipc.Handoff
		err error
	}
	// checkpointsMsg is a project's checkpoints.
	checkpointsMsg struct {
		dir  string
		list []ipc.Checkpoint
		err  error
	}
)

func (c *conn) connect() tea.Cmd {
	return func() tea.Msg {
		w, err := c.client.Events(c.ctx, true)
		if err != nil {
			return offlineMsg{err}
		}
		ctx, cancel := context.WithTimeout(c.ctx, requestTimeout)
		defer cancel()
		list, err := c.client.Sessions(ctx, ipc.ListOptions{All: true})
		if err != nil {
			w.Close()
			return offlineMsg{err}
		}
		return connectedMsg{w: w, sessions: list}
	}
}

// list lists the sessions again for the stream w.
func (c *conn) list(w *ipc.EventWatcher) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(c.ctx, requestTimeout)
		defer cancel()
		list, err := c.client.Sessions(ctx, ipc.ListOptions{All: true})
		return listedMsg{w: w, sessions: list, err: err}
	}
}

// nextEvent waits for the stream's next event.
func nextEvent(w *ipc.EventWatcher) tea.Cmd {
	return func() tea.Msg {
		ev, err := w.Next()
		if err != nil {
			return streamEndedMsg{w: w, err: err}
		}
		return eventMsg{w: w, ev: ev}
	}
}

func (c *conn) fetch(id string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(c.ctx, requestTimeout)
		defer cancel()
		s, err := c.client.Session(ctx, id)
		return recordMsg{id: id, s: s, err: err}
	}
}

func (c *conn) handoff(id string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(c.ctx, requestTimeout)
		defer cancel()
		h, err := c.client.Handoff(ctx, id)
		return handoffMsg{id: id, h: h, err: err}
	}
}

func (c *conn) checkpoints(dir string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(c.ctx, requestTimeout)
		defer cancel()
		list, err := c.client.Checkpoints(ctx, dir, ipc.CheckpointsOptions{})
		return checkpointsMsg{dir: dir, list: list, err: err}
	}
}

// call runs one action's request with a deadline, off the event loop.
func (c *conn) call(timeout time.Duration, f func(ctx context.Context) tea.Msg) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(c.ctx, timeout)
		defer cancel()
		return f(ctx)
	}
}

// follower reads a session's output as it is written (logs -f) on a
// goroutine of its own, so that the daemon's stream is always read; lines
// come to Update in batches.
type follower struct {
	id      string
	started time.Time
	cancel  context.CancelFunc
	lines   chan string
	err     error // set before lines is closed
}

// logMsg is a batch of output lines of follower f, read at at; ended is
// the end of its stream.
type logMsg struct {
	f     *follower
	lines []string
	at    time.Time
	ended bool
	err   error
}

// maxLineBytes cuts longer output lines into pieces.
const maxLineBytes = 64 << 10

// maxBatch bounds the lines one logMsg carries.
const maxBatch = 4096

// follow starts following the output of session id from its last tail
// lines.
func (c *conn) follow(id string, tail int) (*follower, tea.Cmd) {
	ctx, cancel := context.WithCancel(c.ctx)
	f := &follower{id: id, started: time.Now(), cancel: cancel, lines: make(chan string, 1024)}
	go f.run(ctx, c.client, tail)
	return f, f.wait()
}

func (f *follower) run(ctx context.Context, client *ipc.Client, tail int) {
	defer close(f.lines)
	body, err := client.Logs(ctx, f.id, ipc.LogOptions{Tail: tail, Follow: true})
	if err != nil {
		f.err = err
		return
	}
	defer body.Close()
	r := bufio.NewReaderSize(body, maxLineBytes)
	for {
		b, err := r.ReadSlice('\n')
		if len(b) > 0 {
			select {
			case f.lines <- outputLine(string(b)):
			case <-ctx.Done():
				return
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF), ctx.Err() != nil:
		default:
			f.err = err
		}
		return
	}
}

// wait returns the command that waits for the follower's next lines.
func (f *follower) wait() tea.Cmd {
	return func() tea.Msg {
		l, ok := <-f.lines
		if !ok {
			return logMsg{f: f, ended: true, err: f.err, at: time.Now()}
		}
		batch := []string{l}
		for len(batch) < maxBatch {
			select {
			case l, ok := <-f.lines:
				if !ok {
					return logMsg{f: f, lines: batch, ended: true, err: f.err, at: time.Now()}
				}
				batch = append(batch, l)
			default:
				return logMsg{f: f, lines: batch, at: time.Now()}
			}
		}
		return logMsg{f: f, lines: batch, at: time.Now()}
	}
}

// stop ends the follower's stream.
func (f *follower) stop() {
	if f != nil {
		f.cancel()
	}
}
