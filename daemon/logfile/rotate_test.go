//go:build linux

package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// seqLines returns lines from..from+count-1 in the sequence format.
func seqLines(from, count int64) []byte {
	var b bytes.Buffer
	for i := from; i < from+count; i++ {
		fmt.Fprintf(&b, "%015d\n", i)
	}
	return b.Bytes()
}

type modeCase struct {
	name  string
	dir   func(testing.TB) string
	force Mode
	want  Mode
	slack int64 // bytes over Keep × MaxSize the mode may use on disk
}

// blockLimit is what the log's files may have allocated: the cap and the
// mode's slack, and the partial last block of each file.
func (tc modeCase) blockLimit(l *Log, files int) int64 {
	return l.Limit() + tc.slack + int64(files)*4096
}

func modeCases() []modeCase {
	return []modeCase{
		{"collapse", collapseDir, ModeUnknown, ModeCollapse, 0},
		{"punch", tmpfsDir, ModeUnknown, ModePunch, 4096},
		{"truncate", tmpfsDir, ModeTruncate, ModeTruncate, 0},
	}
}

// onDisk sums the allocated bytes and the apparent sizes of the log's files.
func onDisk(t testing.TB, l *Log) (blocks, sizes int64, files int) {
	t.Helper()
	paths := []string{l.Path()}
	for i := 1; i < l.keep+4; i++ {
		paths = append(paths, l.RotatedPath(i))
	}
	for i, p := range paths {
		fi, err := os.Lstat(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= l.keep {
			t.Errorf("%s exists: log_keep %d allows output.log.1 … .%d", p, l.keep, l.keep-1)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s mode = %v, want 0600", p, mode)
		}
		blocks += diskBytes(fi)
		if i > 0 || l.getMode() != ModePunch {
			sizes += fi.Size()
		}
		files++
	}
	return blocks, sizes, files
}

// TestRotateKeepsSuffix writes in bursts larger than the cap and rotates
// after each: the files keep a contiguous run of the newest lines, within
// the cap, in every mode.
func TestRotateKeepsSuffix(t *testing.T) {
	for _, tc := range modeCases() {
		t.Run(tc.name, func(t *testing.T) {
			const maxSize, keep = 3 * 4096, 4
			l := newLog(t, tc.dir(t), Options{MaxSize: maxSize, Keep: keep, forceMode: tc.force})
			w, err := OpenAppend(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var next int64
			for burst := 0; burst < 40; burst++ {
				n := int64(200 + burst*37) // up to ~28 KiB: some bursts overflow every slot
				if _, err := w.Write(seqLines(next, n)); err != nil {
					t.Fatal(err)
				}
				next += n
				if err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			st := l.Stats()
			if st.Mode != tc.want {
				t.Errorf("mode = %v, want %v", st.Mode, tc.want)
			}
			if st.Rotations == 0 {
				t.Error("no rotation happened")
			}
			blocks, _, files := onDisk(t, l)
			if limit := tc.blockLimit(l, files); blocks > limit {
				t.Errorf("%d bytes on disk, over the cap of %d", blocks, limit)
			}
			for name, data := range map[string][]byte{"reader": readAll(t, l), "files": mustRead(t, rawStream(t, l.Path(), keep))} {
				c, err := checkSequence(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				if c.last != next-1 || len(c.gaps) > 0 || c.backward > 0 || c.torn > 0 {
					t.Errorf("%s: %v; want a contiguous run ending at %d", name, c, next-1)
				}
				if tc.want != ModeTruncate && c.lines*lineLen < maxSize*(keep-1) {
					t.Errorf("%s: only %d lines kept, want at least the %d bytes of the rotated files", name, c.lines, maxSize*(keep-1))
				}
			}
		})
	}
}

func mustRead(t testing.TB, r interface{ Read([]byte) (int, error) }) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRotateLosesNothingUnderCap: with room for everything written, every
// line is on disk exactly once, in order, in every mode that promises it.
func TestRotateLosesNothingUnderCap(t *testing.T) {
	for _, tc := range modeCases() {
		if tc.want == ModeTruncate {
			continue // loses its copy-to-truncate window, tested below
		}
		t.Run(tc.name, func(t *testing.T) {
			l := newLog(t, tc.dir(t), Options{MaxSize: 4096, Keep: 200, forceMode: tc.force})
			w, err := OpenAppend(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var next int64
			for i := 0; i < 300; i++ {
				if _, err := w.Write(seqLines(next, 150)); err != nil {
					t.Fatal(err)
				}
				next += 150
				if err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			c, err := checkSequence(bytes.NewReader(readAll(t, l)))
			if err != nil {
				t.Fatal(err)
			}
			if c.first != 0 || c.last != next-1 || c.lines != next || len(c.gaps)+c.backward+c.torn > 0 {
				t.Errorf("%v; want all %d lines", c, next)
			}
			if st := l.Stats(); st.Dropped != 0 || st.Rotations < 100 {
				t.Errorf("stats %+v: want over 100 rotations and nothing dropped", st)
			}
		})
	}
}

// TestPunchReset: past ResetSize, a punched log is copied out and
// truncated, so its apparent size stays bounded; with nothing written
// during the reset, nothing is lost.
func TestPunchReset(t *testing.T) {
	l := newLog(t, tmpfsDir(t), Options{MaxSize: 4096, Keep: 200, ResetSize: 64 << 10})
	w, err := OpenAppend(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var next int64
	for i := 0; i < 100; i++ {
		if _, err := w.Write(seqLines(next, 300)); err != nil {
			t.Fatal(err)
		}
		next += 300
		if err := l.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	if st.Mode != ModePunch || st.Resets == 0 || st.ResetLost != 0 {
		t.Fatalf("stats %+v: want punch mode with resets that lost nothing", st)
	}
	fi, err := os.Stat(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= 64<<10 {
		t.Errorf("output.log apparent size %d, want under the reset size %d", fi.Size(), 64<<10)
	}
	c, err := checkSequence(bytes.NewReader(readAll(t, l)))
	if err != nil {
		t.Fatal(err)
	}
	if c.lines != next || len(c.gaps)+c.backward+c.torn > 0 {
		t.Errorf("%v; want all %d lines", c, next)
	}
}

// TestResetLossUnderAReader: a reset that cannot copy all the writer adds
// truncates what is left. A reader that had read those lost bytes goes on
// at the first byte written after the truncate: it skips none of them.
func TestResetLossUnderAReader(t *testing.T) {
	var r *Reader
	var w *os.File
	var read []byte
	readOn := func() {
		t.Helper()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		read = append(read, b...)
	}
	write := func(from, n int64) {
		t.Helper()
		if _, err := w.Write(seqLines(from, n)); err != nil {
			t.Fatal(err)
		}
	}
	// The writer outruns the reset's last copy (two 4 KiB chunks at
	// most), and the reader reads all of it first.
	var once sync.Once
	l := newLog(t, t.TempDir(), Options{MaxSize: 4096, Keep: 4, forceMode: ModeTruncate,
		beforeResetLock: func() { once.Do(func() { write(400, 2000); readOn() }) }})
	// The pass Open asks for runs on the rotator's goroutine: over (on
	// the empty log) before the writes, so that the one reset, and the
	// hook, are the Rotate below's, on this goroutine.
	waitFor(t, 10*time.Second, "the pass Open asks for", func() bool { return l.Stats().Checks >= 1 })
	if err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	var err error
	if w, err = OpenAppend(l.Path()); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	write(0, 400)
	if r, err = l.NewReader(-1); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	readOn()
	if err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.Resets != 1 || st.ResetLost < 20000 {
		t.Fatalf("stats %+v: want one reset that lost most of 32000 bytes", st)
	}
	write(2400, 100)
	readOn()

	c, err := checkSequence(bytes.NewReader(read))
	if err != nil {
		t.Fatal(err)
	}
	if c.first != 0 || c.last != 2499 || c.lines != 2500 || len(c.gaps)+c.backward+c.torn > 0 || r.Skipped() != 0 {
		t.Errorf("the reader read %v and skipped %d bytes; want lines 0 to 2499 once each", c, r.Skipped())
	}
	if end := streamEnd(t, l); r.Offset() != end {
		t.Errorf("the reader is at %d, the stream ends at %d", r.Offset(), end)
	}
	disk, err := checkSequence(bytes.NewReader(readAll(t, l)))
	if err != nil {
		t.Fatal(err)
	}
	if disk.last != 2499 || len(disk.gaps) != 1 || disk.lines >= c.lines || (2500-disk.first-disk.lines)*lineLen > st.ResetLost {
		t.Errorf("on disk %v; want lines up to 2499 with the reset's loss (%d bytes) the one gap", disk, st.ResetLost)
	}
}

// TestResumeAfterTruncates: where a Reader goes on after truncates it did
// not look at: back to the first one's new byte 0 if it had read past it,
// and, once that truncate is forgotten, back to the oldest byte kept at most.
func TestResumeAfterTruncates(t *testing.T) {
	l := &Log{liveBase: 9000, consumed: 100}
	for g := int64(1); g <= 3; g++ {
		l.resetAt[g%resetMemory] = g * 1000
	}
	l.resets.Store(3)
	for _, tc := range []struct{ off, gen, want int64 }{
		{off: 1500, gen: 0, want: 1000},
		{off: 900, gen: 0, want: 900},
		{off: 2500, gen: 1, want: 2000},
		{off: 3500, gen: 2, want: 3000},
		{off: 3500, gen: 3, want: 3500},
	} {
		if got := l.resumeLocked(tc.off, tc.gen); got != tc.want {
			t.Errorf("at %d after %d truncates: resume at %d, want %d", tc.off, tc.gen, got, tc.want)
		}
	}
	l.resets.Store(3 + resetMemory)
	if got := l.resumeLocked(9500, 2); got != 9100 {
		t.Errorf("after forgotten truncates: resume at %d, want the oldest byte kept, 9100", got)
	}
	if got := l.resumeLocked(8000, 2); got != 8000 {
		t.Errorf("after forgotten truncates: resume at %d, want 8000, before the oldest byte kept", got)
	}
}

// TestReopenTakesOver: a new Log (after a daemon restart) picks up the
// rotated files and the hole, removes a crash's temporary file and the
// files past a lowered log_keep, and reads one stream.
func TestReopenTakesOver(t *testing.T) {
	for _, tc := range modeCases()[:2] {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			l := newLog(t, dir, Options{MaxSize: 4096, Keep: 10})
			w, err := OpenAppend(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var next int64
			for i := 0; i < 8; i++ {
				w.Write(seqLines(next, 400))
				next += 400
				if err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			stale := l.Path() + tmpSuffix + ".0"
			if err := os.WriteFile(stale, []byte("half a chunk"), 0o600); err != nil {
				t.Fatal(err)
			}
			w.Write(seqLines(next, 100))
			next += 100

			l2, err := Open(l.Path(), Options{MaxSize: 4096, Keep: 5})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if _, err := os.Stat(stale); !os.IsNotExist(err) {
				t.Errorf("stale rotation file still there: %v", err)
			}
			for i := 5; i < 10; i++ {
				if _, err := os.Stat(l.RotatedPath(i)); !os.IsNotExist(err) {
					t.Errorf("output.log.%d kept past log_keep 5", i)
				}
			}
			if tc.want == ModePunch && l2.Stats().Mode != ModePunch {
				t.Errorf("reopened punched log in mode %v, want punch", l2.Stats().Mode)
			}
			check := func(what string) {
				c, err := checkSequence(bytes.NewReader(readAll(t, l2)))
				if err != nil {
					t.Fatal(err)
				}
				if c.last != next-1 || len(c.gaps)+c.backward+c.torn > 0 || c.lines < 4*4096/lineLen {
					t.Errorf("%s: %v; want a contiguous run ending at %d", what, c, next-1)
				}
			}
			check("after reopen")
			w.Write(seqLines(next, 1000))
			next += 1000
			if err := l2.Rotate(); err != nil {
				t.Fatal(err)
			}
			check("after a rotation by the new log")
		})
	}
}

// TestNotifyRotatesPromptly: one Notify on a log over its cap starts a
// pass at once, with no timer in the way; a quiet log runs no pass.
func TestNotifyRotatesPromptly(t *testing.T) {
	l := newLog(t, t.TempDir(), Options{MaxSize: 4096, Keep: 3})
	waitFor(t, 2*time.Second, "the pass Open asks for", func() bool { return l.Stats().Checks >= 1 })
	before := l.Stats().Checks
	time.Sleep(200 * time.Millisecond)
	if got := l.Stats().Checks; got != before {
		t.Errorf("quiet log ran %d passes without a notification", got-before)
	}
	w, err := OpenAppend(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for round := 0; round < 5; round++ {
		w.Write(seqLines(int64(round)*1000, 1000))
		rot := l.Stats().Rotations
		start := time.Now()
		l.Notify()
		waitFor(t, 2*time.Second, "a rotation after Notify", func() bool { return l.Stats().Rotations > rot })
		t.Logf("round %d: rotated %v after Notify", round, time.Since(start))
	}
}

func TestOpenRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.log"), Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing log: %v, want not-exist", err)
	}
	if _, err := Open(dir, Options{}); err == nil {
		t.Error("Open of a directory succeeded")
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, nil, 0o600)
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, Options{}); err == nil {
		t.Error("Open followed a symlink")
	}
	if _, err := OpenAppend(link); err == nil {
		t.Error("OpenAppend followed a symlink")
	}
	if _, err := OpenAppend("/dev/null"); err == nil {
		t.Error("OpenAppend accepted a device")
	}
}

func TestRotatedPath(t *testing.T) {
	l := &Log{path: "/s/output.log"}
	for i := 1; i < 4; i++ {
		if got, want := l.RotatedPath(i), "/s/output.log."+strconv.Itoa(i); got != want {
			t.Errorf("RotatedPath(%d) = %q, want %q", i, got, want)
		}
	}
}

// TestKeepOne: with log_keep 1 there are no rotated files; output.log is
// a window over the newest bytes.
func TestKeepOne(t *testing.T) {
	for _, tc := range modeCases()[:2] {
		t.Run(tc.name, func(t *testing.T) {
			const maxSize = 2 * 4096
			l := newLog(t, tc.dir(t), Options{MaxSize: maxSize, Keep: 1})
			w, err := OpenAppend(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var next int64
			for burst := 0; burst < 20; burst++ {
				w.Write(seqLines(next, 700))
				next += 700
				if err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
				blocks, sizes, files := onDisk(t, l)
				if files != 1 || blocks > maxSize+tc.slack || (tc.want == ModeCollapse && sizes > maxSize) {
					t.Fatalf("after burst %d: %d files, %d bytes allocated, %d in files; want output.log alone within %d", burst, files, blocks, sizes, maxSize)
				}
			}
			c, err := checkSequence(bytes.NewReader(readAll(t, l)))
			if err != nil {
				t.Fatal(err)
			}
			if c.last != next-1 || len(c.gaps)+c.backward+c.torn > 0 || c.lines*lineLen < maxSize-4096 {
				t.Errorf("%v; want the newest lines up to %d", c, next-1)
			}
			if st := l.Stats(); st.Dropped == 0 || st.Rotations != 0 {
				t.Errorf("stats %+v: want bytes dropped and no rotation", st)
			}
		})
	}
}
