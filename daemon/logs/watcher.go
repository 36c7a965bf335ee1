// Package logs is the session logs as the daemon sees them written: a
// watcher that learns of every write through inotify (for idle detection,
// followers and rotation within log_max_size) without a pipe through the
// daemon, and the logs API (ipc.Logs), whose followers of plain logs,
// terminal logs and timed lines all run one follow loop.
package logs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/logfile"
	"github.com/sessiond/sessiond/daemon/logkeep"
)

// Watcher learns of writes to session logs through inotify, without a
// pipe through the daemon and without polling: it feeds idle detection (the
// session's callback), log followers and rotation.
type Watcher struct {
	log  *zap.Logger
	opt  logfile.Options
	w    *fsnotify.Watcher
	mu   sync.Mutex
	logs map[string]*watchedLog
	// adopted are the logs of sessions taken over from an earlier daemon
	// and not watched yet: without a stamp file, their bytes are of
	// unknown time.
	adopted map[string]bool
	done    chan struct{}
	// events and overflows count what inotify delivered (for metrics).
	events, overflows atomic.Uint64
	// keeper carries plain sessions' output into their logs within the
	// cap (nil: the child writes its log itself).
	keeper *logkeep.Client
}

// UseKeeper makes the log keeper carry the output of the plain sessions
// started from now on, and of those it carried for an earlier daemon.
// Call it before any log is watched.
func (o *Watcher) UseKeeper(k *logkeep.Client) { o.keeper = k }

// Output implements session.OutputWatcher: what a plain session's command
// writes its output to. With a keeper, that is a pipe it moves into the
// log (out) within the cap; else, or if the keeper cannot take it, out.
func (o *Watcher) Output(path string, out *os.File) *os.File {
	if o.keeper == nil {
		return out
	}
	w, err := o.keeper.Attach(path, out, o.opt.MaxSize, o.opt.Keep)
	if err != nil {
		o.log.Warn("the log keeper cannot take a session's output; its command writes the log itself, held to the cap only as the rotator keeps up",
			zap.String("path", path), zap.Error(err))
		return out
	}
	return w
}

// Done implements session.OutputWatcher: the session's command and its
// processes are gone; what the keeper still holds of its output is moved
// into the log, and the pipe let go.
func (o *Watcher) Done(path string) {
	if o.keeper != nil {
		o.keeper.Release(path)
	}
}

// watchedLog is one session log being written.
type watchedLog struct {
	path    string
	onWrite func(time.Time)
	// file rotates the log within its cap as it is written.
	file *logfile.Log
	// changed is closed at the next write, to wake followers; made when
	// one asks (nil while none waits).
	mu      sync.Mutex
	changed chan struct{}
}

// NewWatcher watches session logs: maxLog and keep are log_max_size and
// log_keep, within which the logs of plain sessions are rotated.
func NewWatcher(log *zap.Logger, maxLog int64, keep int) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch session logs: %w", err)
	}
	o := &Watcher{log: log, opt: logfile.Options{MaxSize: maxLog, Keep: keep, Logger: log.Named("rotate"), Stamps: true},
		w: w, logs: map[string]*watchedLog{}, adopted: map[string]bool{}, done: make(chan struct{})}
	go o.loop()
	return o, nil
}

// coalesceGap is how long the loop leaves inotify's events unread after
// taking all there were. The kernel merges a write event into the one
// before it while neither is read, so a log written thousands of times a
// second (a terminal's reads) costs the daemon a wake-up per gap, not one
// per write. While writes keep coming, gap after gap, the gap doubles up to
// coalesceMax; it is back to coalesceGap once a gap passes without one. A
// follower or the idle clock learns of a write at most a gap later: 2 ms
// after a pause, 16 ms into a flood.
const (
	coalesceGap = 2 * time.Millisecond
	coalesceMax = 16 * time.Millisecond
)

func (o *Watcher) loop() {
	defer close(o.done)
	gap := coalesceGap
	for {
		// Take the first event if one is there, else wait for it; then
		// take every other one already delivered, and let the next ones
		// gather in the kernel.
		took, open := o.take(false)
		if !open {
			return
		}
		if took {
			gap = min(2*gap, coalesceMax)
		} else {
			gap = coalesceGap
			if _, open := o.take(true); !open {
				return
			}
		}
		for {
			took, open := o.take(false)
			if !open {
				return
			}
			if !took {
				break
			}
		}
		time.Sleep(gap)
	}
}

// take handles one event or error of inotify, waiting for it if wait is
// set (else took says whether one was there); open is false once the
// watcher is closed.
func (o *Watcher) take(wait bool) (took, open bool) {
	var ev fsnotify.Event
	var err error
	var ok, isErr bool
	if wait {
		select {
		case ev, ok = <-o.w.Events:
		case err, ok = <-o.w.Errors:
			isErr = true
		}
	} else {
		select {
		case ev, ok = <-o.w.Events:
		case err, ok = <-o.w.Errors:
			isErr = true
		default:
			return false, true
		}
	}
	switch {
	case !ok:
		return false, false
	case isErr:
		o.failed(err)
	default:
		o.event(ev)
	}
	return true, true
}

// event handles one inotify event: a write to a watched log.
func (o *Watcher) event(ev fsnotify.Event) {
	o.events.Add(1)
	if !ev.Has(fsnotify.Write) {
		return
	}
	o.mu.Lock()
	l := o.logs[ev.Name]
	o.mu.Unlock()
	if l == nil {
		return
	}
	now := time.Now()
	l.onWrite(now)
	if l.file != nil {
		// Stamped before followers wake, so that they find the bytes they
		// wake for with their time.
		l.file.Seen(now)
	}
	l.wake()
	if l.file != nil {
		l.file.Notify()
	}
}

// failed handles an error of the watcher; after an overflow, writes went
// unseen, and every log looks again.
func (o *Watcher) failed(err error) {
	o.log.Warn("log watcher", zap.Error(err))
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		return
	}
	o.overflows.Add(1)
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	for _, l := range o.logs {
		if l.file != nil {
			l.file.Seen(now)
		}
		l.wake()
		if l.file != nil {
			l.file.Notify()
		}
	}
}

// Close stops watching every log, and lets the keeper rotate those it
// still carries.
func (o *Watcher) Close() {
	o.w.Close()
	<-o.done
	if o.keeper != nil {
		o.keeper.Close()
	}
}

// WatchLog implements session.OutputWatcher: the log is rotated within
// log_max_size × log_keep as it is written.
func (o *Watcher) WatchLog(path string, onWrite func(time.Time)) (unwatch func()) {
	l := &watchedLog{path: path, onWrite: onWrite}
	opt := o.opt
	o.mu.Lock()
	opt.PriorUnknown = o.adopted[path]
	delete(o.adopted, path)
	o.mu.Unlock()
	if o.keeper != nil {
		// A pipe the keeper carried for an earlier daemon gets its cap
		// again, should the keeper have to be replaced.
		o.keeper.Adopt(path, opt.MaxSize, opt.Keep)
	}
	f, err := logfile.Open(path, opt)
	if err != nil {
		o.log.Warn("session log not rotated", zap.String("path", path), zap.Error(err))
	} else {
		l.file = f
	}
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
		if l.file != nil {
			// What the end wrote may not have been read from inotify yet.
			l.file.Seen(time.Now())
			// One last pass: what the end wrote stays within the cap.
			_ = l.file.Rotate()
			_ = l.file.Close()
		}
		l.wake()
	}
}

// open returns the rotating log of path while it is watched, else one
// opened to read it (release closes what open opened).
func (o *Watcher) open(path string) (f *logfile.Log, release func(), err error) {
	o.mu.Lock()
	l := o.logs[path]
	o.mu.Unlock()
	if l != nil && l.file != nil {
		return l.file, func() {}, nil
	}
	f, err = logfile.Open(path, logfile.Options{Keep: o.opt.Keep, Logger: o.opt.Logger})
	if err != nil {
		return nil, nil, err
	}
	return f, func() { _ = f.Close() }, nil
}

// Tail implements session.OutputWatcher: the last n lines of the log at
// path, across its rotated files, in bounded memory.
func (o *Watcher) Tail(path string, n int) []string {
	if o.keeper != nil {
		// What the pipe holds is the newest output.
		o.keeper.Drain(path)
	}
	f, release, err := o.open(path)
	if err != nil {
		return nil
	}
	defer release()
	lines, err := f.TailLines(n, 64<<10)
	if err != nil {
		return nil
	}
	return lines
}

// changes returns a channel closed at the next write to the log at path,
// or nil when nobody writes it any more.
func (o *Watcher) changes(path string) <-chan struct{} {
	o.mu.Lock()
	l := o.logs[path]
	o.mu.Unlock()
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

func (l *watchedLog) wake() {
	l.mu.Lock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.mu.Unlock()
}

// Adopt marks the log at path as that of a session an earlier daemon
// started, before it is watched.
func (o *Watcher) Adopt(path string) {
	o.mu.Lock()
	o.adopted[path] = true
	o.mu.Unlock()
}

// WatchTerminalLog implements the session's terminal log watcher: the log
// of a tty session is written and rotated (by renaming) by its holder, so
// the daemon watches the session's directory for writes to it, which
// follow the log across its renames, and never rotates it itself.
func (o *Watcher) WatchTerminalLog(path string, onWrite func(time.Time)) (unwatch func()) {
	// A terminal log has no stamps (its holder writes it): the empty next
	// version of a stamp file its directory was made with (a spare's) goes.
	if fi, err := os.Lstat(path + logfile.StampSuffix + ".tmp"); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		_ = os.Remove(path + logfile.StampSuffix + ".tmp")
	}
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

// Counts are what inotify delivered to the log watcher.
type Counts struct {
	Events, Overflows uint64
}

// Counters returns what inotify delivered so far (for metrics).
func (o *Watcher) Counters() Counts {
	return Counts{Events: o.events.Load(), Overflows: o.overflows.Load()}
}
