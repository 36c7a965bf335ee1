package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// DefaultKeep is the number of files a log keeps on disk when Options.Keep
// is not set: output.log and output.log.1.
const DefaultKeep = 2

// Mode says how a Log removes rotated bytes from the live file.
type Mode int32

// Rotation modes. The first rotation picks the best one the filesystem
// offers and falls back on the first refusal.
const (
	// ModeUnknown: no rotation has happened yet.
	ModeUnknown Mode = iota
	// ModeCollapse removes the rotated prefix with FALLOC_FL_COLLAPSE_RANGE
	// (ext4, XFS): nothing is ever lost, the file's size stays under the cap.
	ModeCollapse
	// ModePunch frees the rotated prefix with FALLOC_FL_PUNCH_HOLE (tmpfs,
	// btrfs): nothing is lost at rotation; the file's apparent size grows
	// until a reset (copy, then truncate) brings it back to zero.
	ModePunch
	// ModeTruncate copies the log out and truncates it at every rotation,
	// for filesystems with neither: writes in the copy-to-truncate window
	// are lost.
	ModeTruncate
)

func (m Mode) String() string {
	switch m {
	case ModeCollapse:
		return "collapse"
	case ModePunch:
		return "punch"
	case ModeTruncate:
		return "truncate"
	default:
		return "unknown"
	}
}

// Options configure a Log.
type Options struct {
	// MaxSize is log_max_size: the most bytes output.log holds after a
	// rotation, and the most each rotated file holds. Zero or less turns
	// rotation off (the Log is then only a reader). Values under one
	// filesystem block are raised to one block.
	MaxSize int64
	// Keep is log_keep: how many files are kept on disk, output.log
	// included, so the rotated files are output.log.1 … output.log.<Keep-1>.
	// Zero means DefaultKeep.
	Keep int
	// ResetSize is the apparent size of output.log at which ModePunch
	// resets the file (copy what is left, truncate to zero). Zero means
	// max(64 × MaxSize, 64 MiB).
	ResetSize int64
	// Logger receives rotation failures and mode changes; nil discards them.
	Logger *zap.Logger
	// Stamps keeps the log's stamp file (output.log.stamps, see Seen):
	// when its bytes were seen, for logs with times and selection by time.
	// A Log without it still reads the file, to read by the same offsets.
	Stamps bool
	// PriorUnknown says that bytes found in a log without a stamp file
	// were written before anyone kept times (a session adopted from an
	// older daemon): they are of unknown time. Otherwise they are stamped
	// as seen at Open (the first output of a new session, written before
	// its log was watched).
	PriorUnknown bool

	// stampsMax overrides DefaultStampsMax (tests of compaction).
	stampsMax int

	// forceMode starts the Log in a given mode (tests of the fallbacks on a
	// filesystem that supports more).
	forceMode Mode
	// beforeResetLock runs in a reset just before it takes the lock for
	// its last copy and truncate (tests of what a reset loses).
	beforeResetLock func()
}

// Stats are counters of a Log's rotations since it was opened.
type Stats struct {
	Mode      Mode  // how rotated bytes leave output.log
	Checks    int64 // passes run (one per notification that found work or not)
	Rotations int64 // chunks moved into output.log.1
	Resets    int64 // copy-then-truncate rewrites of output.log (ModePunch, ModeTruncate)
	// Dropped counts bytes removed from output.log without being kept,
	// because the writer outran the cap: more was written since the last
	// pass than Keep × MaxSize holds.
	Dropped int64
	// ResetLost counts bytes a reset saw written but did not copy before it
	// truncated, because the writer kept adding faster than it copied (in
	// ModeTruncate, or in ModePunch past 16 × ResetSize). Writes that land
	// between the reset's last look at the size and its truncate cannot be
	// seen and are not counted.
	ResetLost int64
}

// span is a range of absolute stream offsets: [start, end).
type span struct{ start, end int64 }

// Log is one session's output.log with its rotated files: a rotator that
// keeps it under its cap while the child writes, and the readers that see
// the files as one stream. Open at most one Log per path in a process.
type Log struct {
	path      string
	log       *zap.Logger
	f         *os.File // output.log, read-write; the child has its own O_APPEND descriptor
	block     int64
	maxSize   int64 // 0: no rotation
	chunk     int64 // bytes per rotated file: MaxSize rounded down to whole blocks
	keep      int
	resetSize int64

	// rotMu serializes passes; what only passes change (mode, buf) is
	// guarded by it.
	rotMu sync.Mutex

	// mu orders readers against moves of bytes: a reader holds it shared
	// while it maps a stream offset to a file and reads output.log; a pass
	// holds it exclusively while it collapses, punches, truncates or
	// renames.
	mu       sync.RWMutex
	liveBase int64  // stream offset of output.log's byte 0
	consumed int64  // output.log offset below which the bytes are in rotated files
	rotated  []span // rotated[i] is output.log.<i+1>: contiguous, newest first
	// resetAt[g%resetMemory] is the stream offset that truncate g (the
	// value of resets after it) gave output.log's new byte 0. Bytes a
	// Reader read past it before the truncate were lost with it: the
	// Reader goes on there (resumeLocked).
	resetAt [resetMemory]int64

	mode      atomic.Int32
	checks    atomic.Int64
	rotations atomic.Int64
	resets    atomic.Int64
	dropped   atomic.Int64
	resetLost atomic.Int64

	beforeResetLock func() // Options.beforeResetLock

	// stamps writes the stamp file (Options.Stamps), nil otherwise.
	stamps *stampFile

	done chan struct{}
	wake chan struct{} // a write came while the rotator lingers
	// The rotator's course: running while its goroutine lives (set under
	// runMu), closed once Close began; passes counts the goroutine for
	// Close to wait on. A write since the last pass is a token in wake.
	runMu     sync.Mutex
	running   atomic.Bool
	closed    bool
	passes    sync.WaitGroup
	closeOnce sync.Once
	lastErr   string
	lastErrAt time.Time
}

// OpenAppend opens (creating, mode 0600) the log at path for a child's
// stdout and stderr: write-only, O_APPEND, so every write lands at the end
// the rotator leaves. Pass the file to the child and close it in the daemon
// once the child has started. A path that is not a regular file is refused.
func OpenAppend(path string) (*os.File, error) {
	f, err := openFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log for writing: %w", err)
	}
	if err := checkRegular(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkRegular(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat log %s: %w", f.Name(), err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("log %s is not a regular file (%s)", f.Name(), fi.Mode().Type())
	}
	return nil
}

// Open opens the existing log at path (see OpenAppend) and, when
// opt.MaxSize is positive, starts its rotator, which runs a pass whenever
// Notify is called. Rotated files left by an earlier Log are taken over;
// those numbered Keep or higher are removed, and so is a rotation's
// temporary file left by a crash (its bytes are still in output.log).
func Open(path string, opt Options) (*Log, error) {
	f, err := openFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	if err := checkRegular(f); err != nil {
		f.Close()
		return nil, err
	}
	l := &Log{
		path:  path,
		log:   opt.Logger,
		f:     f,
		block: blockSize(f),
		keep:  opt.Keep,
		done:  make(chan struct{}),
		wake:  make(chan struct{}, 1),
	}
	if l.log == nil {
		l.log = zap.NewNop()
	}
	if l.keep <= 0 {
		l.keep = DefaultKeep
	}
	if opt.MaxSize > 0 {
		l.maxSize = max(opt.MaxSize, l.block)
		l.chunk = l.maxSize / l.block * l.block
		l.resetSize = opt.ResetSize
		if l.resetSize <= 0 {
			l.resetSize = max(64*l.maxSize, 64<<20)
		}
	}
	l.mode.Store(int32(opt.forceMode))
	l.beforeResetLock = opt.beforeResetLock
	// The stamp file says which stream offset the oldest byte on disk has,
	// so that its offsets stay right across daemon restarts.
	prior := readPriorStamps(path + StampSuffix)
	if err := l.takeOver(prior.oldest); err != nil {
		f.Close()
		return nil, err
	}
	if opt.Stamps {
		st, err := l.openStamps(prior, opt.stampsMax, opt.PriorUnknown)
		if err != nil {
			l.log.Warn("log kept without times", zap.String("path", path), zap.Error(err))
		}
		l.stamps = st
	}
	l.Notify() // the log may have grown past its cap while no one watched
	return l, nil
}

// takeOver learns the state an earlier Log left: the rotated files, and
// the hole a punching rotator left at the start of output.log. The oldest
// byte on disk gets stream offset oldest (as the stamp file says), plus
// what the rotated files beyond log_keep held.
func (l *Log) takeOver(oldest int64) error {
	dir, base := filepath.Split(l.path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list rotated logs in %s: %w", dir, err)
	}
	sizes := make([]int64, l.keep-1)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, base+tmpSuffix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove stale rotation file: %w", err)
			}
			continue
		}
		num, ok := strings.CutPrefix(name, base+".")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(num)
		if err != nil || i < 1 || strconv.Itoa(i) != num {
			continue
		}
		p := filepath.Join(dir, name)
		if i >= l.keep {
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
				oldest += fi.Size()
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove rotated log beyond log_keep: %w", err)
			}
			continue
		}
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		sizes[i-1] = fi.Size()
	}
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("stat log: %w", err)
	}
	consumed := dataStart(l.f, fi.Size())
	if consumed > 0 {
		// Only a punching rotator leaves a hole at the start. The block
		// the last punch ended in is zeroed up to where the rotated bytes
		// ended; those zeros are not output.
		consumed = l.skipZeros(consumed, fi.Size())
		if l.maxSize > 0 && Mode(l.mode.Load()) == ModeUnknown {
			l.mode.Store(int32(ModePunch))
		}
	}
	var total int64
	for _, s := range sizes {
		total += s
	}
	l.consumed = consumed
	l.liveBase = oldest + total - consumed
	l.rotated = make([]span, 0, l.keep-1)
	end := oldest + total
	for _, s := range sizes {
		l.rotated = append(l.rotated, span{end - s, end})
		end -= s
	}
	return nil
}

// skipZeros returns the offset after the NUL bytes that follow off within
// off's block.
func (l *Log) skipZeros(off, size int64) int64 {
	limit := min((off/l.block+1)*l.block, size)
	buf := make([]byte, limit-off)
	n, _ := l.f.ReadAt(buf, off)
	for i := 0; i < n; i++ {
		if buf[i] != 0 {
			return off + int64(i)
		}
	}
	return off + int64(n)
}

// Path returns the path of output.log.
func (l *Log) Path() string { return l.path }

// RotatedPath returns the path of the i-th rotated file (1 is the newest).
func (l *Log) RotatedPath(i int) string { return l.path + "." + strconv.Itoa(i) }

// Limit returns the most bytes the log keeps on disk after a pass:
// Keep × MaxSize (as raised to one block), or 0 when rotation is off.
// ModePunch may use one block more.
func (l *Log) Limit() int64 { return int64(l.keep) * l.maxSize }

// Notify tells the rotator that the log was written to. It never blocks:
// notifications that arrive during a pass are folded into one more pass.
// The daemon calls it from its inotify watch of the log (and for every log
// after an inotify overflow). Without calls the rotator does nothing.
//
// The rotator is a goroutine only while there is work: a log idle for
// rotatorLinger holds none.
func (l *Log) Notify() {
	if l.maxSize <= 0 {
		return
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
	if l.running.Load() {
		return // it will take the token
	}
	l.runMu.Lock()
	defer l.runMu.Unlock()
	if !l.closed && !l.running.Load() {
		l.running.Store(true)
		l.passes.Add(1)
		go l.run()
	}
}

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	return Stats{
		Mode:      Mode(l.mode.Load()),
		Checks:    l.checks.Load(),
		Rotations: l.rotations.Load(),
		Resets:    l.resets.Load(),
		Dropped:   l.dropped.Load(),
		ResetLost: l.resetLost.Load(),
	}
}

// DiskUsage returns the bytes output.log and its rotated files take on
// disk (their allocated blocks, so a punched hole counts for nothing).
func (l *Log) DiskUsage() (int64, error) {
	l.mu.RLock()
	n := len(l.rotated)
	l.mu.RUnlock()
	var total int64
	for i := 0; i <= n; i++ {
		p := l.path
		if i > 0 {
			p = l.RotatedPath(i)
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) && i > 0 {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("disk usage of log: %w", err)
		}
		total += diskBytes(fi)
	}
	return total, nil
}

// Close stops the rotator (waiting for a pass in progress) and closes the
// log. Readers opened from it keep working; they see no more rotations.
func (l *Log) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.runMu.Lock()
		l.closed = true
		l.runMu.Unlock()
		close(l.done)
		l.passes.Wait()
		// A Rotate called by someone else may still be running.
		l.rotMu.Lock()
		err = l.f.Close()
		l.rotMu.Unlock()
		if l.stamps != nil {
			err = errors.Join(err, l.stamps.close())
		}
	})
	return err
}

func (l *Log) run() {
	defer l.passes.Done()
	linger := time.NewTimer(rotatorLinger)
	defer linger.Stop()
	for {
		select {
		case <-l.wake:
		case <-l.done:
			l.running.Store(false)
			return
		case <-linger.C:
			// A write that came as the rotator leaves left its token: the
			// rotator stays for it (Notify saw it running).
			l.runMu.Lock()
			l.running.Store(false)
			select {
			case <-l.wake:
				l.running.Store(true)
				l.runMu.Unlock()
			default:
				l.runMu.Unlock()
				return
			}
		}
		if err := l.Rotate(); err != nil && !errors.Is(err, errClosed) {
			l.warn(err)
		}
		linger.Reset(rotatorLinger)
	}
}

// rotatorLinger is how long the rotator waits for more writes before its
// goroutine leaves.
const rotatorLinger = 2 * time.Second

// warn logs a rotation failure, once per distinct error a minute, so a
// full disk under a chatty child does not flood the daemon's log.
func (l *Log) warn(err error) {
	msg := err.Error()
	now := time.Now()
	if msg == l.lastErr && now.Sub(l.lastErrAt) < time.Minute {
		return
	}
	l.lastErr, l.lastErrAt = msg, now
	l.log.Warn("rotate log", zap.String("path", l.path), zap.Error(err))
}
