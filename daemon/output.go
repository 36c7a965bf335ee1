package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// outputWatcher learns of writes to session logs through inotify, without a
// pipe through the daemon and without polling: it feeds idle detection (the
// session's callback), log followers and rotation.
type outputWatcher struct {
	log    *zap.Logger
	maxLog int64
	w      *fsnotify.Watcher
	mu     sync.Mutex
	logs   map[string]*watchedLog
	done   chan struct{}
}

// watchedLog is one session log being written.
type watchedLog struct {
	path    string
	onWrite func(time.Time)
	// changed is closed (and replaced) at every write, to wake followers.
	mu      sync.Mutex
	changed chan struct{}
	// lastRotateCheck is when the log's size was last looked at (Unix ns).
	lastRotateCheck atomic.Int64
}

func newOutputWatcher(log *zap.Logger, maxLog int64) (*outputWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch session logs: %w", err)
	}
	o := &outputWatcher{log: log, maxLog: maxLog, w: w, logs: map[string]*watchedLog{}, done: make(chan struct{})}
	go o.loop()
	return o, nil
}

func (o *outputWatcher) loop() {
	defer close(o.done)
	for {
		select {
		case ev, ok := <-o.w.Events:
			if !ok {
				return
			}
			if !ev.Has(fsnotify.Write) {
				continue
			}
			o.mu.Lock()
			l := o.logs[ev.Name]
			o.mu.Unlock()
			if l != nil {
				l.onWrite(time.Now())
				l.wake()
				o.maybeRotate(l)
			}
		case err, ok := <-o.w.Errors:
			if !ok {
				return
			}
			o.log.Warn("log watcher", zap.Error(err))
		}
	}
}

func (o *outputWatcher) close() {
	o.w.Close()
	<-o.done
}

// WatchLog implements session.OutputWatcher.
func (o *outputWatcher) WatchLog(path string, onWrite func(time.Time)) (unwatch func()) {
	l := &watchedLog{path: path, onWrite: onWrite, changed: make(chan struct{})}
	o.mu.Lock()
	o.logs[path] = l
	o.mu.Unlock()
	if err := o.w.Add(path); err != nil {
		o.log.Warn("cannot watch a session log; idle detection sees file activity only", zap.String("path", path), zap.Error(err))
	}
	return func() {
		o.mu.Lock()
		if o.logs[path] == l {
			delete(o.logs, path)
		}
		o.mu.Unlock()
		_ = o.w.Remove(path)
		l.wake()
	}
}

// changes returns a channel closed at the next write to the log at path,
// or nil when nobody writes it any more.
func (o *outputWatcher) changes(path string) <-chan struct{} {
	o.mu.Lock()
	l := o.logs[path]
	o.mu.Unlock()
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

func (l *watchedLog) wake() {
	l.mu.Lock()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// rotateCheckEvery bounds how often a busy log's size is looked at.
const rotateCheckEvery = 500 * time.Millisecond

// maybeRotate keeps the log under log_max_size: the log is copied to
// output.log.1 and truncated in place, because the child holds it open
// (O_APPEND, so its next write lands at the new end).
func (o *outputWatcher) maybeRotate(l *watchedLog) {
	if o.maxLog <= 0 {
		return
	}
	now := time.Now().UnixNano()
	if last := l.lastRotateCheck.Load(); now-last < int64(rotateCheckEvery) {
		return
	}
	l.lastRotateCheck.Store(now)
	fi, err := os.Stat(l.path)
	if err != nil || fi.Size() <= o.maxLog {
		return
	}
	data, err := os.ReadFile(l.path)
	if err != nil {
		o.log.Warn("rotate log", zap.Error(err))
		return
	}
	if err := state.WriteFile(l.path+".1", data, 0o600); err != nil {
		o.log.Warn("rotate log", zap.Error(err))
		return
	}
	if err := os.Truncate(l.path, 0); err != nil {
		o.log.Warn("rotate log", zap.Error(err))
	}
}

// SessionLogs implements ipc.Sessions.
func (d *Daemon) SessionLogs(ctx context.Context, c ipc.Caller, id string, opt ipc.LogOptions, w io.Writer) error {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return err
	}
	f, err := os.Open(s.LogPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if opt.Tail > 0 {
		if err := session.SeekTail(f, opt.Tail); err != nil {
			return err
		}
	}
	buf := make([]byte, 32*1024)
	for {
		// Ask for the wake-up before reading, so that a write between the
		// read and the wait is not missed.
		changed := d.out.changes(s.LogPath())
		if err := copyAvailable(f, w, buf); err != nil {
			return err
		}
		if !opt.Follow {
			return nil
		}
		if changed == nil {
			// Nobody watches the log yet (a session still starting) or any
			// more (it is ending): look again shortly.
			select {
			case <-s.Done():
				return copyAvailable(f, w, buf)
			case <-ctx.Done():
				return nil
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case <-changed:
		case <-s.Done():
			return copyAvailable(f, w, buf)
		case <-ctx.Done():
			return nil
		}
	}
}

// copyAvailable copies from f's offset to its current end; a truncated
// (rotated) log is followed from its new start.
func copyAvailable(f *os.File, w io.Writer, buf []byte) error {
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() < off {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	_, err = io.CopyBuffer(w, f, buf)
	return err
}
