package logfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// maxRead bounds one read, and so how long a reader holds the lock that
// rotation waits for.
const maxRead = 64 << 10

// Reader reads a log as one stream: the rotated files, oldest first, then
// output.log, while rotations move bytes from one to the other. It tracks
// its place by stream offset (bytes since the oldest byte the Log found on
// disk when it was opened), which no rotation changes; a plain file offset
// into output.log would jump ahead by every collapsed chunk.
//
// At the end of what has been written, Read returns io.EOF; call it again
// once the log has been written to (a follower waits for the same inotify
// event that drives Notify). A Reader that falls so far behind that its
// bytes were rotated out of the last kept file continues at the oldest byte
// still kept and counts what it missed in Skipped. One that read bytes a
// reset then lost goes back to the first byte written after the reset
// (resumeLocked). A Reader is not safe for concurrent use; many Readers may
// read one Log at once.
type Reader struct {
	l       *Log
	live    *os.File // a descriptor of its own, so Log.Close does not end it
	pos     int64
	resets  int64    // the Log's truncates when pos was last checked against them
	rot     *os.File // the rotated file holding rotSpan, once opened
	rotSpan span
	skipped int64
}

// gone is the answer for an offset whose bytes are no longer on disk: the
// reader continues at next.
type gone struct{ next int64 }

func (g gone) Error() string {
	return fmt.Sprintf("log bytes rotated away; next kept offset %d", g.next)
}

// NewReader returns a Reader at the start of the last n lines of the log,
// counted across the rotated files. With n < 0 it starts at the oldest
// byte kept; with n == 0, at the end (it sees only what is written next).
func (l *Log) NewReader(n int) (*Reader, error) {
	f, err := openFile(l.path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open log for reading: %w", err)
	}
	// Counted before pos is found: a truncate in between makes the first
	// Read go back to it, which reads bytes twice rather than skip any.
	r := &Reader{l: l, live: f, resets: l.resets.Load()}
	switch {
	case n < 0:
		r.pos = l.oldest()
	case n == 0:
		r.pos, err = r.end()
	default:
		r.pos, err = r.tailStart(n)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Read reads the next bytes of the stream; io.EOF means none are written
// yet.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := r.readAt(p, r.pos, true)
		var g gone
		if errors.As(err, &g) {
			r.skipped += g.next - r.pos
			r.pos = g.next
			continue
		}
		r.pos += int64(n)
		return n, err
	}
}

// Offset returns the stream offset just past the last byte Read returned;
// the next Read starts there, or earlier after a reset lost bytes that the
// Reader had read.
func (r *Reader) Offset() int64 { return r.pos }

// resumeLocked returns where a Reader at off goes on that last looked when
// the Log had made gen truncates. A truncate drops the bytes of output.log
// that its reset did not copy, and gives their stream offsets to the bytes
// written next; a Reader that read some of the dropped bytes before it
// would skip as many new ones. It goes back to where the new bytes begin
// instead: what it read of the dropped bytes stays read, and Offset goes
// back by as much. Only the first truncate since gen matters, since each
// puts the new bytes at or past where the one before did. When that one is
// forgotten, the Reader goes back to the oldest byte kept at most; it may
// then read some bytes twice, but skips none.
func (l *Log) resumeLocked(off, gen int64) int64 {
	switch now := l.resets.Load(); {
	case now == gen:
		return off
	case now-gen > resetMemory:
		return min(off, l.oldestLocked())
	default:
		return min(off, l.resetAt[(gen+1)%resetMemory])
	}
}

// resetMemory is how many truncates a Log remembers for its Readers.
const resetMemory = 64

// Skipped returns how many bytes the Reader missed because they left the
// disk (rotated past log_keep, or dropped by a writer that outran the cap)
// before it got to them.
func (r *Reader) Skipped() int64 { return r.skipped }

// Close releases the Reader's descriptors.
func (r *Reader) Close() error {
	if r.rot != nil {
		r.rot.Close()
		r.rot = nil
	}
	return r.live.Close()
}

// oldest returns the stream offset of the oldest byte on disk.
func (l *Log) oldest() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.oldestLocked()
}

func (l *Log) oldestLocked() int64 {
	if n := len(l.rotated); n > 0 {
		return l.rotated[n-1].start
	}
	return l.liveBase + l.consumed
}

// end returns the stream offset just past the last byte written.
func (r *Reader) end() (int64, error) {
	r.l.mu.RLock()
	defer r.l.mu.RUnlock()
	fi, err := r.live.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat log: %w", err)
	}
	return r.l.liveBase + fi.Size(), nil
}

// readAt reads from stream offset off, from whichever file holds it now;
// an offset that is no longer on disk gets a gone error. With next, off is
// the Reader's pos, which first goes back past bytes a truncate dropped
// after the Reader read them (resumeLocked), under the lock of the read.
func (r *Reader) readAt(p []byte, off int64, next bool) (int, error) {
	if len(p) > maxRead {
		p = p[:maxRead]
	}
	l := r.l
	l.mu.RLock()
	if next {
		r.pos = l.resumeLocked(r.pos, r.resets)
		r.resets = l.resets.Load()
		off = r.pos
	}
	if oldest := l.oldestLocked(); off < oldest {
		l.mu.RUnlock()
		return 0, gone{oldest}
	}
	if liveStart := l.liveBase + l.consumed; off >= liveStart {
		// output.log changes only under the write lock, so offset and
		// bytes agree while the read lock is held.
		n, err := r.live.ReadAt(p, off-l.liveBase)
		l.mu.RUnlock()
		if n > 0 {
			return n, nil
		}
		if errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		return 0, fmt.Errorf("read log: %w", err)
	}
	idx := -1
	for i, s := range l.rotated {
		if s.start <= off && off < s.end {
			idx = i
			break
		}
	}
	if idx < 0 {
		next := l.liveBase + l.consumed
		l.mu.RUnlock()
		return 0, gone{next}
	}
	sp := l.rotated[idx]
	if r.rot == nil || r.rotSpan != sp {
		if r.rot != nil {
			r.rot.Close()
			r.rot = nil
		}
		// The name maps to this span only while the lock is held; once
		// open, the file's bytes never change, whatever it is renamed to.
		f, err := openFile(l.RotatedPath(idx+1), os.O_RDONLY, 0)
		if err != nil {
			l.mu.RUnlock()
			return 0, fmt.Errorf("open rotated log: %w", err)
		}
		r.rot, r.rotSpan = f, sp
	}
	l.mu.RUnlock()
	n, err := r.rot.ReadAt(p[:min(int64(len(p)), sp.end-off)], off-sp.start)
	if n > 0 {
		return n, nil
	}
	if errors.Is(err, io.EOF) {
		// Shorter than when it was mapped: a file put there by hand.
		return 0, gone{sp.end}
	}
	return 0, fmt.Errorf("read rotated log: %w", err)
}

// readFull fills p from stream offset off.
func (r *Reader) readFull(p []byte, off int64) error {
	for len(p) > 0 {
		n, err := r.readAt(p, off, false)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}
