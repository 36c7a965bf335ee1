package term

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// logFile appends terminal output to the session log and rotates it at a
// cap. The holder is the only writer, so rotation is exact: a log never
// grows past the cap, and nothing is read back into memory to rotate it.
type logFile struct {
	path string
	max  int64 // 0: no cap
	keep int
	f    *os.File
	size int64
}

func openLog(path string, max int64, keep int) (*logFile, error) {
	l := &logFile{path: path, max: max, keep: keep}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *logFile) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open session log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open session log: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p, rotating as often as the cap requires. A failed write is
// reported but does not stop later ones: the terminal must go on when the
// disk is full, and the log resumes when there is room again. A failed
// rotation is reported too, and the output goes on into the log over its
// cap rather than be lost; the next write tries the rotation again.
func (l *logFile) Write(p []byte) (int, error) {
	written := 0
	var rerr error
	for len(p) > 0 {
		if l.max > 0 && l.size >= l.max && rerr == nil {
			rerr = l.rotate()
		}
		n := len(p)
		if l.max > 0 && rerr == nil {
			n = int(min(int64(n), l.max-l.size))
		}
		w, err := l.f.Write(p[:n])
		l.size += int64(w)
		written += w
		if err != nil {
			return written, errors.Join(rerr, fmt.Errorf("write session log %s: %w", l.path, err))
		}
		p = p[n:]
	}
	return written, rerr
}

// rotate renames the log to .1 (shifting older ones up to .keep, dropping
// the oldest) and starts a new one.
func (l *logFile) rotate() error {
	// The data is written already; a close error has nothing left to say,
	// and a log whose reopening failed last time is closed twice.
	_ = l.f.Close()
	var err error
	if l.keep == 0 {
		err = os.Remove(l.path)
	} else {
		for i := l.keep - 1; i >= 1; i-- {
			if e := os.Rename(l.rotated(i), l.rotated(i+1)); e != nil && !errors.Is(e, fs.ErrNotExist) {
				err = e
				break
			}
		}
		if err == nil {
			err = os.Rename(l.path, l.rotated(1))
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Keep writing to the same file rather than lose the output.
		if oerr := l.open(); oerr != nil {
			return errors.Join(fmt.Errorf("rotate session log %s: %w", l.path, err), oerr)
		}
		return fmt.Errorf("rotate session log %s: %w", l.path, err)
	}
	return l.open()
}

func (l *logFile) rotated(i int) string { return l.path + "." + strconv.Itoa(i) }

func (l *logFile) Close() error { return l.f.Close() }
