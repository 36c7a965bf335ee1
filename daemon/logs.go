package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// outputWatcher learns of writes to session logs through inotify, without a
// pipe through the daemon and without polling: it feeds idle detection, log
// followers and rotation.
type outputWatcher struct {
	log  *zap.Logger
	w    *fsnotify.Watcher
	mu   sync.Mutex
	logs map[string]*session
	done chan struct{}
}

func newOutputWatcher(log *zap.Logger) (*outputWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch session logs: %w", err)
	}
	o := &outputWatcher{log: log, w: w, logs: map[string]*session{}, done: make(chan struct{})}
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
			s := o.logs[ev.Name]
			o.mu.Unlock()
			if s != nil {
				s.notifyOutput(time.Now())
				s.maybeRotate()
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

func (d *Daemon) watchOutput(s *session) {
	p := s.logPath()
	d.out.mu.Lock()
	d.out.logs[p] = s
	d.out.mu.Unlock()
	if err := d.out.w.Add(p); err != nil {
		s.log.Warn("cannot watch the session log; idle detection sees file activity only", zap.Error(err))
	}
}

func (d *Daemon) unwatchOutput(s *session) {
	p := s.logPath()
	d.out.mu.Lock()
	delete(d.out.logs, p)
	d.out.mu.Unlock()
	_ = d.out.w.Remove(p)
}

// rotateCheckEvery bounds how often a busy log's size is looked at.
const rotateCheckEvery = 500 * time.Millisecond

// maybeRotate keeps the log under log_max_size: the log is copied to
// output.log.1 and truncated in place, because the child holds it open
// (O_APPEND, so its next write lands at the new end).
func (s *session) maybeRotate() {
	max := int64(s.d.cfg.LogMaxSize)
	if max <= 0 {
		return
	}
	now := time.Now().UnixNano()
	if last := s.lastRotateCheck.Load(); now-last < int64(rotateCheckEvery) {
		return
	}
	s.lastRotateCheck.Store(now)
	fi, err := os.Stat(s.logPath())
	if err != nil || fi.Size() <= max {
		return
	}
	data, err := os.ReadFile(s.logPath())
	if err != nil {
		s.log.Warn("rotate log", zap.Error(err))
		return
	}
	if err := state.WriteFile(s.logPath()+".1", data, 0o600); err != nil {
		s.log.Warn("rotate log", zap.Error(err))
		return
	}
	if err := os.Truncate(s.logPath(), 0); err != nil {
		s.log.Warn("rotate log", zap.Error(err))
	}
}

// Logs implements ipc.Backend.
func (d *Daemon) Logs(ctx context.Context, c ipc.Caller, id string, opt ipc.LogOptions, w io.Writer) error {
	s, err := d.reg.lookup(c, id)
	if err != nil {
		return err
	}
	f, err := os.Open(s.logPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if opt.Tail > 0 {
		if err := seekTail(f, opt.Tail); err != nil {
			return err
		}
	}
	buf := make([]byte, 32*1024)
	for {
		// Ask for the wake-up before reading, so a write between the read
		// and the wait is not missed.
		changed := s.outputChanged()
		if err := copyAvailable(f, w, buf); err != nil {
			return err
		}
		if !opt.Follow {
			return nil
		}
		select {
		case <-changed:
		case <-s.done:
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

// seekTail positions f at the start of its last n lines.
func seekTail(f *os.File, n int) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	const chunk = 16 * 1024
	lines := 0
	pos := size
	buf := make([]byte, chunk)
	// A final newline ends the last line rather than starting another.
	skipLast := true
	for pos > 0 {
		step := int64(chunk)
		if pos < step {
			step = pos
		}
		pos -= step
		if _, err := f.ReadAt(buf[:step], pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		b := buf[:step]
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				skipLast = false
				continue
			}
			if skipLast {
				skipLast = false
				continue
			}
			lines++
			if lines == n {
				_, err := f.Seek(pos+int64(i)+1, io.SeekStart)
				return err
			}
		}
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}

// tailLines returns the last n lines of the session's log.
func (s *session) tailLines(n int) []string {
	f, err := os.Open(s.logPath())
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := seekTail(f, n); err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, 64*1024))
	if err != nil {
		return nil
	}
	data = bytes.TrimRight(data, "\n")
	if len(data) == 0 {
		return []string{}
	}
	return stringsOf(bytes.Split(data, []byte("\n")))
}

func stringsOf(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}
