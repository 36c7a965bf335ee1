package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"go.uber.org/zap"
)

// tmpSuffix names a rotated file being copied, before it is renamed into
// place. One left by a crash holds bytes still in output.log.
const tmpSuffix = ".rotating"

// maxCatchUp bounds the rounds of rotation, and of copying under the lock,
// that a reset makes while the writer keeps adding.
const maxCatchUp = 8

var errClosed = errors.New("log is closed")

// Rotate runs a pass now: while output.log holds more than MaxSize bytes,
// its oldest chunk is moved into output.log.1 (the older files shift up,
// the one past Keep is removed). It returns when output.log is back under
// its cap. The rotator runs the same pass on Notify.
func (l *Log) Rotate() error {
	if l.maxSize <= 0 {
		return nil
	}
	l.rotMu.Lock()
	defer l.rotMu.Unlock()
	l.checks.Add(1)
	defer l.noteOldest()
	return l.pass()
}

func (l *Log) closing() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *Log) size() (int64, error) {
	fi, err := l.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat log: %w", err)
	}
	return fi.Size(), nil
}

func (l *Log) getMode() Mode { return Mode(l.mode.Load()) }

// setMode records how rotated bytes leave output.log; why is the refusal
// that made a better mode unavailable.
func (l *Log) setMode(m Mode, why error) {
	if old := Mode(l.mode.Swap(int32(m))); old != m {
		fields := []zap.Field{zap.String("path", l.path), zap.Stringer("mode", m)}
		if why != nil {
			fields = append(fields, zap.NamedError("because", why))
		}
		l.log.Info("log rotation mode", fields...)
	}
}

// pass brings output.log under its cap. Each round looks at the size anew,
// because the child keeps writing while the pass runs.
func (l *Log) pass() error {
	slots := int64(l.keep - 1)
	for {
		if l.closing() {
			return errClosed
		}
		l.noteOldest()
		size, err := l.size()
		if err != nil {
			return err
		}
		remaining := size - l.consumed
		switch l.getMode() {
		case ModeTruncate:
			if size <= l.maxSize {
				return nil
			}
			if err := l.reset(); err != nil {
				return err
			}
			continue
		case ModePunch:
			// The reset also bounds the apparent size of a log whose
			// writer keeps ahead of the rotations.
			if size >= l.resetSize {
				if err := l.reset(); err != nil {
					return err
				}
				continue
			}
			if remaining <= l.maxSize {
				return nil
			}
		default:
			if remaining <= l.maxSize {
				return nil
			}
		}
		chunks := (remaining - l.maxSize + l.chunk - 1) / l.chunk
		if chunks > slots {
			// The writer outran the rotator: the oldest bytes would be
			// pushed out of the last slot within this pass, so they are
			// removed without the copy, in whole blocks, leaving the slots'
			// chunks and at most MaxSize (at least MaxSize less a block).
			over := remaining - l.maxSize - slots*l.chunk
			if err := l.drop((over + l.block - 1) / l.block * l.block); err != nil {
				return err
			}
			continue
		}
		// The new chunks push these files out anyway; removing them
		// before the copies keeps the copies within the cap.
		if err := l.trim(int(slots - chunks)); err != nil {
			return err
		}
		if err := l.rotateChunks(chunks); err != nil && !errors.Is(err, errOutrun) {
			return err
		}
	}
}

// trim removes the rotated files numbered above n.
func (l *Log) trim(n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for i := len(l.rotated); i > n; i-- {
		if err := os.Remove(l.RotatedPath(i)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(l.rotated) > n {
		l.rotated = l.rotated[:n]
	}
	if len(errs) > 0 {
		return fmt.Errorf("rotate log %s: %w", l.path, errors.Join(errs...))
	}
	return nil
}

// rotateChunks moves output.log's oldest n chunks into output.log.n …
// output.log.1. The copies run without the lock, as no one else moves bytes
// of output.log, and all of them before the one removal: a collapse writes
// the file back and drops its page cache, so copying the next chunk after
// it would read from the disk. The renames and the removal run under the
// lock, so a reader never maps an offset to the wrong file. A crash between
// the renames and the removal leaves the chunks in both files: duplicated,
// never lost.
//
// A writer can get ahead so far while the chunks are copied (from the disk,
// when a collapse has just dropped the page cache) that they would be
// pushed out by newer ones as soon as they were in place. The copy then
// stops (errOutrun) and the pass drops them instead, so that the files do
// not grow by all the writer adds during a slow copy.
func (l *Log) rotateChunks(n int64) error {
	slots := int64(l.keep - 1)
	worth := func() bool {
		size, err := l.size()
		return err != nil || size-l.consumed-l.maxSize <= (n+slots)*l.chunk
	}
	tmps := make([]string, 0, n)
	sizes := make([]int64, 0, n)
	for i := int64(0); i < n; i++ {
		tmp, err := l.copyChunk(int(i), l.consumed+i*l.chunk, l.chunk, worth)
		if err != nil {
			for _, t := range tmps {
				os.Remove(t)
			}
			return err
		}
		tmps, sizes = append(tmps, tmp), append(sizes, l.chunk)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	start := l.liveBase + l.consumed
	if err := l.installLocked(tmps, sizes, start, false); err != nil {
		return err
	}
	l.rotations.Add(n)
	return l.removeLocked(n * l.chunk)
}

// copyPiece is how much a chunk copy moves between two looks at whether it
// is still worth finishing.
const copyPiece = 1 << 20

// errOutrun stops a copy that the writer has made pointless.
var errOutrun = errors.New("the writer got ahead of the copy")

// copyChunk copies n bytes of output.log from off into a new temporary
// file, which it returns the name of. Between pieces it asks worth, when
// not nil, whether to go on; if not, it removes the file and returns
// errOutrun.
func (l *Log) copyChunk(i int, off, n int64, worth func() bool) (string, error) {
	name := l.path + tmpSuffix + "." + strconv.Itoa(i)
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("rotate log: %w", err)
	}
	f, err := openFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("rotate log: %w", err)
	}
	var got int64
	for got < n && err == nil {
		if got > 0 && worth != nil && !worth() {
			err = errOutrun
			break
		}
		var c int64
		c, err = copyRange(f, l.f, off+got, min(copyPiece, n-got))
		got += c
		if err == nil && c == 0 {
			err = fmt.Errorf("copied %d of %d bytes: the log is shorter than expected", got, n)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		if errors.Is(err, errOutrun) {
			return "", err
		}
		return "", fmt.Errorf("rotate log %s: %w", l.path, err)
	}
	return name, nil
}

// appendChunk appends up to n bytes of output.log from off to the
// temporary file name and returns how many it copied.
func (l *Log) appendChunk(name string, off, n int64) (int64, error) {
	f, err := openFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return 0, fmt.Errorf("rotate log: %w", err)
	}
	got, err := copyRange(f, l.f, off, n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return got, fmt.Errorf("rotate log %s: %w", l.path, err)
	}
	return got, nil
}

// installLocked renames the temporary files tmps (oldest first, holding
// sizes bytes from stream offset start on) into output.log.1 … and shifts
// the rotated files up; files pushed past Keep are removed, and all of them
// when fresh says the new chunks do not follow on from them.
func (l *Log) installLocked(tmps []string, sizes []int64, start int64, fresh bool) error {
	slots := l.keep - 1
	for len(tmps) > slots {
		// Only the newest chunks fit; the oldest are lost to the cap.
		os.Remove(tmps[0])
		l.dropped.Add(sizes[0])
		start += sizes[0]
		tmps, sizes = tmps[1:], sizes[1:]
	}
	m := len(tmps)
	kept := len(l.rotated)
	if fresh {
		kept = 0
	}
	kept = min(kept, slots-m)
	var errs []error
	for i := len(l.rotated); i > kept; i-- {
		if err := os.Remove(l.RotatedPath(i)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for i := kept; i >= 1 && m > 0; i-- {
		if err := os.Rename(l.RotatedPath(i), l.RotatedPath(i+m)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	spans := make([]span, 0, slots)
	end := start
	for _, s := range sizes {
		end += s
	}
	for j := m - 1; j >= 0; j-- {
		if err := os.Rename(tmps[j], l.RotatedPath(m-j)); err != nil {
			errs = append(errs, err)
		}
		spans = append(spans, span{end - sizes[j], end})
		end -= sizes[j]
	}
	l.rotated = append(spans, l.rotated[:kept]...)
	if len(errs) > 0 {
		for _, t := range tmps {
			os.Remove(t)
		}
		l.resyncLocked(start + sum(sizes))
		return fmt.Errorf("rotate log %s: %w", l.path, errors.Join(errs...))
	}
	return nil
}

func sum(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}

// resyncLocked rebuilds the map of rotated files from the disk after a
// failed rename, with output.log.1 ending at end.
func (l *Log) resyncLocked(end int64) {
	l.rotated = l.rotated[:0]
	for i := 1; i < l.keep; i++ {
		var s int64
		if fi, err := os.Lstat(l.RotatedPath(i)); err == nil {
			s = fi.Size()
		}
		l.rotated = append(l.rotated, span{end - s, end})
		end -= s
	}
}

// removeLocked takes the n bytes after l.consumed out of output.log: they
// are in output.log.1 now, or dropped.
func (l *Log) removeLocked(n int64) error {
	var why error
	if mode := l.getMode(); mode == ModeUnknown || mode == ModeCollapse {
		total := l.consumed + n
		if total%l.block == 0 {
			err := collapse(l.f, 0, total)
			if err == nil {
				l.setMode(ModeCollapse, nil)
				l.liveBase += total
				l.consumed = 0
				return nil
			}
			if !unsupported(err) {
				// Stay in collapse mode: the next rotation collapses these
				// bytes together with its own.
				l.consumed = total
				return fmt.Errorf("collapse rotated bytes out of the log (retried at the next rotation): %w", err)
			}
			why = err
		}
	}
	off := l.consumed
	l.consumed += n
	if l.getMode() == ModeTruncate {
		return nil
	}
	err := punch(l.f, off, n)
	if err == nil {
		l.setMode(ModePunch, why)
		return nil
	}
	if unsupported(err) {
		// The bytes stay in output.log until the reset the next pass runs.
		l.setMode(ModeTruncate, err)
		return nil
	}
	return fmt.Errorf("punch rotated bytes out of the log: %w", err)
}

// drop removes the oldest n bytes of output.log without keeping them, and
// with them every rotated file, as all of those are older.
func (l *Log) drop(n int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.installLocked(nil, nil, l.liveBase+l.consumed+n, true); err != nil {
		return err
	}
	l.dropped.Add(n)
	return l.removeLocked(n)
}

// reset brings output.log back to zero bytes: it rotates chunks out the
// usual way until less than a chunk is left, copies the rest into a short
// chunk, then, under the lock, copies what came meanwhile, up to the size a
// write in progress settles at (settledSize), until no more came or a
// chunk more has been copied, and truncates. A write the
// child starts between the last look at the size and the truncate is lost,
// whole: no file operation can tell the kernel "truncate only if nothing
// was appended".
func (l *Log) reset() error {
	slots := int64(l.keep - 1)
	settle := min(settleBytes, l.chunk)
	for round := 0; round < maxCatchUp; round++ {
		if l.closing() {
			return errClosed
		}
		size, err := l.settledSize(l.consumed)
		if err != nil {
			return err
		}
		remaining := size - l.consumed
		chunks := remaining / l.chunk
		if remaining <= settle || chunks == 0 {
			break
		}
		if chunks > slots {
			if err := l.drop((chunks - slots) * l.chunk); err != nil {
				return err
			}
			continue
		}
		if err := l.trim(int(slots - chunks)); err != nil {
			return err
		}
		if err := l.rotateChunks(chunks); err != nil && !errors.Is(err, errOutrun) {
			return err
		}
	}

	// What is left (under a chunk, unless the writer is quick) is copied
	// without the lock too, up to a chunk's worth, so that only the last
	// few writes are copied under it.
	c := &resetCopy{l: l, pos: l.consumed}
	for round := 0; round < maxCatchUp && slots > 0 && sum(c.sizes) < l.chunk; round++ {
		size, err := l.settledSize(c.pos)
		if err != nil {
			return c.fail(err)
		}
		if size-c.pos <= settle {
			break
		}
		if _, err := c.copyTo(size, min(size-c.pos, l.chunk)); err != nil {
			return c.fail(err)
		}
	}

	if l.beforeResetLock != nil {
		l.beforeResetLock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	start := l.liveBase + l.consumed
	budget := settle + l.chunk
	caughtUp := false
	var size, rest int64
	for round := 0; round < maxCatchUp; round++ {
		var err error
		if size, err = l.settledSize(c.pos); err != nil {
			return c.fail(err)
		}
		if rest = size - c.pos; rest <= 0 {
			caughtUp = true
			break
		}
		if slots == 0 {
			l.dropped.Add(rest)
			c.pos = size
			continue
		}
		if budget == 0 {
			break
		}
		n, err := c.copyTo(size, budget)
		if err != nil {
			return c.fail(err)
		}
		budget -= n
	}
	if !caughtUp && l.getMode() == ModePunch && size < forceResetFactor*l.resetSize {
		// The writer adds faster than the copies: a truncate now would
		// lose what it adds. What was copied becomes rotated chunks, as
		// in a rotation, and a later pass tries the reset again.
		if len(c.tmps) == 0 {
			return nil
		}
		if err := l.installLocked(c.tmps, c.sizes, start, false); err != nil {
			return err
		}
		l.rotations.Add(int64(len(c.tmps)))
		return l.removeLocked(c.pos - l.consumed)
	}
	// What the writer added past pos is lost with the truncate: counted
	// from the size just before it, so that only the writes of the two
	// syscalls' window go uncounted, however long this pass took since it
	// last looked.
	if fi, err := l.f.Stat(); err == nil && fi.Size() > size {
		size = fi.Size()
	}
	if lost := size - c.pos; lost > 0 {
		l.resetLost.Add(lost)
	}
	if err := l.f.Truncate(0); err != nil {
		return c.fail(fmt.Errorf("truncate log: %w", err))
	}
	// Bytes past pos, if any, were lost: output.log's new byte 0 comes
	// right after the last byte kept.
	l.liveBase += c.pos
	l.consumed = 0
	l.resetAt[l.resets.Add(1)%resetMemory] = l.liveBase
	if len(c.tmps) > 0 {
		if err := l.installLocked(c.tmps, c.sizes, start, false); err != nil {
			return err
		}
		l.rotations.Add(int64(len(c.tmps)))
	}
	return nil
}

// forceResetFactor times ResetSize is the apparent size at which a reset
// in ModePunch truncates even while the writer outpaces its copies.
const forceResetFactor = 16

// settleBytes is how little a reset leaves to copy under the lock (at
// most a chunk); under it, it copies at most a chunk more than that.
const settleBytes = 64 << 10

// resetCopy is the chunks a reset has copied so far.
type resetCopy struct {
	l     *Log
	pos   int64 // output.log offset copied up to
	tmps  []string
	sizes []int64
}

// copyTo copies output.log from c.pos towards size, at most limit bytes,
// filling the last chunk before starting a new one.
func (c *resetCopy) copyTo(size, limit int64) (int64, error) {
	l := c.l
	var copied int64
	for c.pos < size && copied < limit {
		want := min(size-c.pos, limit-copied)
		var got int64
		if n := len(c.sizes); n > 0 && c.sizes[n-1] < l.chunk {
			var err error
			got, err = l.appendChunk(c.tmps[n-1], c.pos, min(want, l.chunk-c.sizes[n-1]))
			c.sizes[n-1] += got
			if err != nil {
				return copied + got, err
			}
			if got == 0 {
				return copied, fmt.Errorf("rotate log %s: shorter than its size", l.path)
			}
		} else {
			got = min(want, l.chunk)
			tmp, err := l.copyChunk(len(c.tmps), c.pos, got, nil)
			if err != nil {
				return copied, err
			}
			c.tmps, c.sizes = append(c.tmps, tmp), append(c.sizes, got)
		}
		c.pos += got
		copied += got
	}
	return copied, nil
}

// fail removes the chunks copied so far and returns err.
func (c *resetCopy) fail(err error) error {
	for _, t := range c.tmps {
		os.Remove(t)
	}
	c.tmps, c.sizes = nil, nil
	return err
}

func (l *Log) settledSize(from int64) (int64, error) {
	n, err := settledSize(l.f, from)
	if err != nil {
		return 0, fmt.Errorf("size of log: %w", err)
	}
	return n, nil
}
