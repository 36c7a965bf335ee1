package logfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// StampSuffix names a log's stamp file: output.log.stamps.
const StampSuffix = ".stamps"

// DefaultStampsMax is how many records a stamp file holds before it is
// compacted to half of that (256 KiB on disk at most).
const DefaultStampsMax = 16384

// stampResolution is how close in time two write bursts must be to share a
// record: a child that writes all the time costs one record per interval,
// not one per write.
const stampResolution = time.Millisecond

// maxStampFile bounds what is read of a stamp file, whoever wrote it.
const maxStampFile = 64 << 20

// stampFile writes a Log's stamp file. Records are written, not synced: a
// crash of the daemon loses none (they are in the page cache), a power
// loss may lose the newest, as it loses the child's own newest output.
type stampFile struct {
	path string
	log  *zap.Logger
	max  int

	mu  sync.Mutex
	f   *os.File
	n   int    // records in the file
	gen uint64 // bumped by every rewrite (a new file)
	// lastIdx is the record number of the last burst when it is the last
	// record of the file (-1 otherwise): a burst close to it in time
	// extends it in place.
	lastIdx int
	lastAt  int64
	end     int64 // stream offset stamped up to
	oldest  int64 // oldest kept offset last recorded
	lastErr string
}

// priorStamps is what Open found of a stamp file.
type priorStamps struct {
	found  bool
	recs   []stamp
	oldest int64
	err    error // the file is not one, or breaks the format somewhere
}

// readPriorStamps reads the stamp file at path, if there is one; its
// oldest offset is the stream offset Open gives the oldest byte on disk.
func readPriorStamps(path string) priorStamps {
	data, err := readStampFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return priorStamps{}
	}
	if err != nil {
		return priorStamps{found: true, err: err}
	}
	recs, oldest, err := decodeStamps(data)
	return priorStamps{found: true, recs: recs, oldest: oldest, err: err}
}

func readStampFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := checkRegular(f); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStampFile+1))
	if err != nil {
		return nil, fmt.Errorf("read stamp file: %w", err)
	}
	if len(data) > maxStampFile {
		return nil, fmt.Errorf("stamp file %s is over %d bytes", path, maxStampFile)
	}
	return data, nil
}

// openStamps starts keeping the log's stamp file from what Open found:
// records that lie beyond the bytes on disk are cut (the log lost them),
// a log with bytes and no stamp file gets them as of unknown time when
// priorUnknown says so, and bytes written while no one kept times (the
// daemon was down, or the log was not watched yet) are stamped as seen
// now.
func (l *Log) openStamps(prior priorStamps, maxRecs int, priorUnknown bool) (*stampFile, error) {
	if maxRecs <= 0 {
		maxRecs = DefaultStampsMax
	}
	end, err := l.streamEnd()
	if err != nil {
		return nil, err
	}
	oldest := l.oldest()
	st := &stampFile{path: l.path + StampSuffix, log: l.log, max: max(maxRecs, 4), lastIdx: -1}
	recs := prior.recs
	fresh := !prior.found || errors.Is(prior.err, errStampFile)
	switch {
	case fresh && priorUnknown:
		recs = nil
		if end > oldest {
			recs = []stamp{{end: end, at: stampUnknown}}
		}
	case fresh:
		recs = nil
		if end > oldest {
			recs = []stamp{{end: end, at: time.Now().UnixNano()}}
		}
	default:
		if prior.err != nil {
			l.log.Warn("stamp file damaged; kept up to the damage", zap.String("path", st.path), zap.Error(prior.err))
		}
		cut := false
		for i := range recs {
			if recs[i].end > end {
				recs, cut = recs[:i], true
				break
			}
		}
		if cut || prior.err != nil {
			l.log.Warn("stamp file is ahead of its log; times after the log's end dropped", zap.String("path", st.path))
		}
		if last := lastEnd(recs); end > last {
			recs = append(recs, stamp{end: end, at: time.Now().UnixNano()})
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.rewriteLocked(recs, oldest); err != nil {
		return nil, err
	}
	return st, nil
}

func lastEnd(recs []stamp) int64 {
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].end
}

// rewriteLocked replaces the stamp file with the oldest offset and recs,
// atomically (a new file renamed over the old).
func (st *stampFile) rewriteLocked(recs []stamp, oldest int64) error {
	buf := make([]byte, 0, len(stampMagic)+(len(recs)+1)*stampSize)
	buf = append(buf, stampMagic...)
	buf = stamp{end: oldest, at: stampOldest}.append(buf)
	for _, r := range recs {
		buf = r.append(buf)
	}
	tmp := st.path + ".tmp"
	// Written over what the file holds (a new session's directory has it
	// empty), cut to its length after, not opened with O_TRUNC: on ext4 a
	// truncation to nothing makes the file's close (at the session's end)
	// write it back at once, one more write for each end of a stop --all.
	f, err := openFile(tmp, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("write stamp file: %w", err)
	}
	err = fillStamps(f, buf)
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write stamp file: %w", err)
	}
	if err := os.Rename(tmp, st.path); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write stamp file: %w", err)
	}
	if st.f != nil {
		st.f.Close()
	}
	st.f = f
	st.gen++
	st.n = len(recs) + 1
	st.oldest = oldest
	st.end = lastEnd(recs)
	st.lastIdx, st.lastAt = -1, 0
	if n := len(recs); n > 0 && recs[n-1].at > 0 {
		st.lastIdx, st.lastAt = st.n-1, recs[n-1].at
	}
	return nil
}

// fillStamps makes f hold buf alone: written from its start, and cut
// where buf ends if it held more.
func fillStamps(f *os.File, buf []byte) error {
	if _, err := f.WriteAt(buf, 0); err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() > int64(len(buf)) {
		return f.Truncate(int64(len(buf)))
	}
	return nil
}

// writeLocked writes record r at record number i (st.n appends).
func (st *stampFile) writeLocked(i int, r stamp) error {
	var b [stampSize]byte
	_, err := st.f.WriteAt(r.append(b[:0]), int64(len(stampMagic)+i*stampSize))
	if err != nil {
		return fmt.Errorf("write stamp file: %w", err)
	}
	if i == st.n {
		st.n++
	}
	return nil
}

// seen stamps the bytes up to end with t.
func (st *stampFile) seen(end int64, t time.Time) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.f == nil || end <= st.end {
		return nil
	}
	at := t.UnixNano()
	var err error
	if st.lastIdx == st.n-1 && st.lastIdx >= 0 && at-st.lastAt < int64(stampResolution) && at >= st.lastAt {
		err = st.writeLocked(st.lastIdx, stamp{end: end, at: st.lastAt})
	} else {
		err = st.writeLocked(st.n, stamp{end: end, at: at})
		if err == nil {
			st.lastIdx, st.lastAt = st.n-1, at
		}
	}
	if err != nil {
		return err
	}
	st.end = end
	if st.n >= st.max {
		return st.compactLocked()
	}
	return nil
}

// discarded records that the bytes before oldest have left the disk.
func (st *stampFile) discarded(oldest int64) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.f == nil || oldest <= st.oldest {
		return nil
	}
	if err := st.writeLocked(st.n, stamp{end: oldest, at: stampOldest}); err != nil {
		return err
	}
	st.oldest = oldest
	if st.n >= st.max {
		return st.compactLocked()
	}
	return nil
}

// compactLocked rewrites the file with the records of bytes still on
// disk; when those are still more than half the bound, the oldest are
// merged in pairs (a pair takes the earlier time), so that old lines keep
// coarser times and new ones exact times.
func (st *stampFile) compactLocked() error {
	data := make([]byte, len(stampMagic)+st.n*stampSize)
	n, err := st.f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read stamp file: %w", err)
	}
	recs, oldest, _ := decodeStamps(data[:n])
	oldest = max(oldest, st.oldest)
	first := 0
	for first < len(recs) && recs[first].end <= oldest {
		first++
	}
	recs = mergeStamps(recs[first:], st.max/2)
	return st.rewriteLocked(recs, oldest)
}

// mergeStamps merges the oldest records of recs in pairs until at most
// limit are left. Known and unknown times are never merged together.
func mergeStamps(recs []stamp, limit int) []stamp {
	for len(recs) > limit {
		excess := len(recs) - limit
		out := make([]stamp, 0, len(recs))
		i := 0
		for ; i+1 < len(recs) && excess > 0; i += 2 {
			a, b := recs[i], recs[i+1]
			if (a.at == stampUnknown) != (b.at == stampUnknown) {
				out = append(out, a)
				i--
				continue
			}
			out = append(out, stamp{end: b.end, at: a.at})
			excess--
		}
		out = append(out, recs[i:]...)
		if len(out) == len(recs) {
			// Nothing could merge (alternating unknown and known runs,
			// which a file never holds): keep the newest.
			return recs[len(recs)-limit:]
		}
		recs = out
	}
	return recs
}

// snapshot reads the whole file; it may be compacted meanwhile by no one,
// as it holds the lock.
func (st *stampFile) snapshot(from *Stamps) (*Stamps, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.f == nil {
		return nil, errClosed
	}
	if from != nil && from.gen == st.gen && from.n > 0 && from.n <= st.n {
		// Only what was added since, and the last record read, which may
		// have been extended in place.
		start := from.n - 1
		body := make([]byte, (st.n-start)*stampSize)
		m, err := st.f.ReadAt(body, int64(len(stampMagic)+start*stampSize))
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read stamp file: %w", err)
		}
		s := &Stamps{recs: from.recs, oldest: from.oldest, gen: st.gen}
		if from.lastBurst {
			s.recs = s.recs[:len(s.recs)-1]
		}
		s.recs = append([]stamp(nil), s.recs...)
		var oldest int64
		s.recs, oldest, err = decodeRecords(body[:m], start, s.recs, 0)
		if err != nil {
			return nil, err
		}
		s.oldest = max(s.oldest, oldest)
		s.n = start + m/stampSize
		s.lastBurst = lastIsRun(body[:m])
		return s, nil
	}
	data := make([]byte, len(stampMagic)+st.n*stampSize)
	m, err := st.f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read stamp file: %w", err)
	}
	recs, oldest, err := decodeStamps(data[:m])
	if err != nil {
		return nil, err
	}
	n := (m - len(stampMagic)) / stampSize
	return &Stamps{recs: recs, oldest: oldest, n: n, gen: st.gen, lastBurst: lastIsRun(data[len(stampMagic):m])}, nil
}

// lastIsRun reports whether the last whole record of body times bytes (a
// burst or an unknown run, kept in Stamps.recs) rather than saying where
// the kept bytes begin.
func lastIsRun(body []byte) bool {
	n := len(body) / stampSize
	if n == 0 {
		return false
	}
	return int64(binary.LittleEndian.Uint64(body[(n-1)*stampSize+8:])) != stampOldest
}

func (st *stampFile) close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.f == nil {
		return nil
	}
	err := st.f.Close()
	st.f = nil
	return err
}

// warn logs a failure of the stamp file once per distinct error: times are
// a convenience, never a reason to stop the log.
func (st *stampFile) warn(err error) {
	st.mu.Lock()
	repeat := err.Error() == st.lastErr
	st.lastErr = err.Error()
	st.mu.Unlock()
	if !repeat {
		st.log.Warn("stamp file", zap.String("path", st.path), zap.Error(err))
	}
}

// Seen records that the log was seen to grow at t (an inotify write event,
// one burst of the child's output): the bytes written since the last call
// are stamped with t. It does nothing unless Options.Stamps is set. The
// daemon calls it before waking followers, so that they find the bytes
// they wake for stamped.
func (l *Log) Seen(t time.Time) {
	st := l.stamps
	if st == nil {
		return
	}
	end, err := l.streamEnd()
	if err == nil {
		err = st.seen(end, t)
	}
	if err != nil {
		st.warn(err)
	}
}

// noteOldest records in the stamp file where the bytes on disk begin now,
// after a round of rotation.
func (l *Log) noteOldest() {
	if st := l.stamps; st != nil {
		if err := st.discarded(l.oldest()); err != nil {
			st.warn(err)
		}
	}
}

// streamEnd returns the stream offset just past the last byte written.
func (l *Log) streamEnd() (int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	fi, err := l.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat log: %w", err)
	}
	return l.liveBase + fi.Size(), nil
}

// Stamps returns the log's stamp file as it is now; nil (and no error)
// when the log has none, having been written before sessiond kept times.
// With from, a refresh of an earlier answer, only what was added since is
// read.
func (l *Log) Stamps(from *Stamps) (*Stamps, error) {
	if st := l.stamps; st != nil {
		s, err := st.snapshot(from)
		if !errors.Is(err, errClosed) {
			return s, err
		}
	}
	data, err := readStampFile(l.path + StampSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	recs, oldest, err := decodeStamps(data)
	if errors.Is(err, errStampFile) {
		return nil, fmt.Errorf("%s: %w", l.path+StampSuffix, err)
	}
	// A damaged tail leaves the records before it, which are still right.
	return &Stamps{recs: recs, oldest: oldest, n: -1}, nil
}
