//go:build linux

package logfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// fullSpeedFor is how long the chatty children write.
func fullSpeedFor() time.Duration {
	if testing.Short() {
		return 3 * time.Second
	}
	return 20 * time.Second
}

// streamEnd returns the stream offset just past the last byte written.
func streamEnd(t testing.TB, l *Log) int64 {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	fi, err := l.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return l.liveBase + fi.Size()
}

// checkYes reads r and reports the first offset that breaks the pattern
// "y\n" repeated, or -1.
func checkYes(r io.Reader) (int64, int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	for {
		b, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			return -1, off, nil
		}
		if err != nil {
			return off, off, err
		}
		if want := "y\n"[off%2]; b != want {
			return off, off, nil
		}
		off++
	}
}

// TestFullSpeedYesStaysUnderCap is the issue's `timeout 20 yes`: a child
// writing as fast as it can into an O_APPEND descriptor for 20 s (3 s with
// -short) while the rotator, driven by inotify, keeps the log under
// log_max_size × log_keep. The rotator's process must not grow by 20 MiB,
// and what is kept must be intact.
func TestFullSpeedYesStaysUnderCap(t *testing.T) {
	if _, err := exec.LookPath("yes"); err != nil {
		t.Skip("no yes(1) on this machine")
	}
	for _, tc := range modeCases()[:2] {
		t.Run(tc.name, func(t *testing.T) {
			const maxSize, keep = 10 << 20, 3
			l := newLog(t, tc.dir(t), Options{MaxSize: maxSize, Keep: keep})
			stop := notifyOnWrite(t, l)
			rssBefore := procStatus(t, "VmRSS")
			resetPeakRSS(t)

			ctx, cancel := context.WithTimeout(context.Background(), fullSpeedFor())
			defer cancel()
			cmd := exec.CommandContext(ctx, "yes")
			startWriter(t, l.Path(), cmd)
			var peak int64
			tick := time.NewTicker(20 * time.Millisecond)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
		sample:
			for {
				select {
				case <-done:
					break sample
				case <-tick.C:
					if n, err := l.DiskUsage(); err == nil {
						peak = max(peak, n)
					}
				}
			}
			tick.Stop()
			// The flood's memory, before the test's own tail below.
			growth := procStatus(t, "VmHWM") - rssBefore
			// What comes after the flood (the last words of a command
			// that flooded its log) is kept whole, however the flood
			// ended.
			tail := bytes.Repeat([]byte("y\n"), 1<<20)
			af, err := OpenAppend(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := af.Write(tail); err != nil {
				t.Fatal(err)
			}
			af.Close()
			stop()
			if err := l.Rotate(); err != nil {
				t.Fatal(err)
			}

			st := l.Stats()
			written := streamEnd(t, l)
			blocks, sizes, files := onDisk(t, l)
			t.Logf("%s: wrote %.1f GB in %v (%.0f MB/s); %d rotations, %.1f GB dropped; on disk %.1f MiB (peak %.1f MiB during the run, cap %d MiB); RSS growth %.1f MiB",
				st.Mode, float64(written)/1e9, fullSpeedFor(), float64(written)/fullSpeedFor().Seconds()/1e6,
				st.Rotations, float64(st.Dropped)/1e9, float64(blocks)/(1<<20), float64(peak)/(1<<20), keep*maxSize>>20, float64(growth)/(1<<20))
			if st.Mode != tc.want {
				t.Errorf("mode %v, want %v", st.Mode, tc.want)
			}
			if st.Rotations == 0 {
				t.Error("no rotation")
			}
			if st.Dropped+st.ResetLost > written {
				t.Errorf("%d bytes counted dropped and %d lost of %d written", st.Dropped, st.ResetLost, written)
			}
			if written < 2*l.Limit() {
				t.Fatalf("the child wrote only %d bytes: not enough to test the cap", written)
			}
			if limit := l.Limit() + tc.slack; blocks > tc.blockLimit(l, files) || sizes > limit {
				t.Errorf("on disk: %d bytes allocated in %d files, %d bytes in files; cap %d", blocks, files, sizes, limit)
			}
			// Unbounded buffering of the flood would be gigabytes; the
			// race detector's shadow memory for what the rotator touches
			// adds some 15 MiB on a loaded machine.
			limit := int64(20 << 20)
			if raceEnabled {
				limit = 48 << 20
			}
			if growth >= limit {
				t.Errorf("RSS grew by %d bytes, want under %d MiB", growth, limit>>20)
			}
			r, err := l.NewReader(-1)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			bad, n, err := checkYes(r)
			if err != nil || bad >= 0 {
				t.Errorf("kept stream breaks the y pattern at %d of %d bytes (%v)", bad, n, err)
			}
			// A reset leaves output.log empty and a short chunk in
			// output.log.1, and a writer that outran the rotator just
			// before it (the chunks in between dropped, the older ones
			// with them, so that the stream stays whole) can leave that
			// short chunk all there is of the flood: with resets, what is
			// sure to stay is what came after it.
			want := l.Limit() - maxSize
			if st.Resets > 0 {
				want = int64(len(tail))
			}
			if n < want {
				t.Errorf("only %d bytes kept, want at least %d", n, want)
			}
			if bad, _, _ := checkYes(rawStream(t, l.Path(), keep)); bad >= 0 {
				t.Errorf("the files concatenated break the y pattern at %d", bad)
			}
		})
	}
}

// follow reads l as a follower does until stop is closed and the end is
// reached, and returns what it read.
func follow(t *testing.T, l *Log, wake <-chan struct{}, stop <-chan struct{}) (*bytes.Buffer, *Reader) {
	t.Helper()
	r, err := l.NewReader(-1)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		_, err := io.CopyBuffer(&out, r, buf)
		if err != nil {
			t.Error(err)
			return &out, r
		}
		select {
		case <-wake:
		case <-stop:
			if _, err := io.CopyBuffer(&out, r, buf); err != nil {
				t.Error(err)
			}
			return &out, r
		}
	}
}

type seqRun struct {
	check    seqCheck
	followed seqCheck
	same     bool // the follower read exactly what is on disk at the end
	// Lines on disk from the follower's first line on that it did not
	// read, and lines it read that are not on disk (a reset lost them
	// after the follower read them).
	unread, unkept int64
	skipped        int64
	stats          Stats
	written        int64
	blocks         int64
	sizes          int64
	files          int
}

// runSequence has the sequence writer write budget bytes at full speed
// into l while the rotator runs and a follower reads along.
func runSequence(t *testing.T, l *Log, budget int64) seqRun {
	t.Helper()
	wake := make(chan struct{}, 1)
	stopNotify := onWrite(t, l.Path(), func() {
		l.Notify()
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	defer stopNotify()
	stop := make(chan struct{})
	var followed *bytes.Buffer
	var fr *Reader
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		followed, fr = follow(t, l, wake, stop)
	}()
	cmd := seqWriter(t, budget, 5*fullSpeedFor())
	start := time.Now()
	startWriter(t, l.Path(), cmd)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	elapsed := time.Since(start)
	if err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	defer fr.Close()

	var res seqRun
	disk := readAll(t, l)
	var err error
	if res.check, err = checkSequence(bytes.NewReader(disk)); err != nil {
		t.Fatal(err)
	}
	if raw := mustRead(t, rawStream(t, l.Path(), l.keep)); !bytes.Equal(raw, disk) {
		t.Errorf("the files concatenated (%d bytes) differ from the Reader's stream (%d bytes)", len(raw), len(disk))
	}
	if res.followed, err = checkSequence(bytes.NewReader(followed.Bytes())); err != nil {
		t.Fatal(err)
	}
	res.same = bytes.Equal(followed.Bytes(), disk)
	res.unread, res.unkept = compareLines(followed.Bytes(), disk)
	res.skipped = fr.Skipped()
	res.stats = l.Stats()
	res.written = streamEnd(t, l)
	res.blocks, res.sizes, res.files = onDisk(t, l)
	t.Logf("%s: %d MiB in %v (%.0f MB/s): %+v; on disk %d KiB; kept %v; followed %v (skipped %d)",
		res.stats.Mode, res.written>>20, elapsed.Round(time.Millisecond), float64(res.written)/elapsed.Seconds()/1e6,
		res.stats, res.blocks>>10, res.check, res.followed, res.skipped)
	return res
}

// compareLines returns how many whole sequence lines of disk, from the
// first line of followed on, followed lacks, and how many of followed are
// not in disk.
func compareLines(followed, disk []byte) (unread, unkept int64) {
	lines := func(b []byte) []int64 {
		var ns []int64
		for line := range bytes.Lines(b) {
			if n, ok := parseLine(line); ok {
				ns = append(ns, n)
			}
		}
		return ns
	}
	f, d := lines(followed), lines(disk)
	for len(d) > 0 && len(f) > 0 && d[0] < f[0] {
		d = d[1:]
	}
	for len(f) > 0 && len(d) > 0 {
		switch {
		case f[0] == d[0]:
			f, d = f[1:], d[1:]
		case f[0] < d[0]:
			unkept++
			f = f[1:]
		default:
			unread++
			d = d[1:]
		}
	}
	return unread + int64(len(d)), unkept + int64(len(f))
}

func sequenceBudget() int64 {
	if testing.Short() {
		return 32 << 20
	}
	return 128 << 20
}

// TestFullSpeedNoLineLost: with a cap that holds everything written, a
// child writing sequence lines at full speed finds every line on disk
// exactly once, across hundreds of rotations, and so does a follower
// reading along. In ModePunch this holds until the first reset, so
// ResetSize is set past the budget here.
func TestFullSpeedNoLineLost(t *testing.T) {
	for _, tc := range modeCases()[:2] {
		t.Run(tc.name, func(t *testing.T) {
			budget := sequenceBudget()
			const maxSize = 256 << 10
			keep := int(budget/maxSize) + 2
			l := newLog(t, tc.dir(t), Options{MaxSize: maxSize, Keep: keep, ResetSize: 2 * budget})
			res := runSequence(t, l, budget)
			lines := res.written / lineLen
			if res.stats.Mode != tc.want {
				t.Errorf("mode %v, want %v", res.stats.Mode, tc.want)
			}
			if res.written < budget {
				t.Errorf("wrote %d bytes, want the budget %d", res.written, budget)
			}
			if c := res.check; c.first != 0 || c.last != lines-1 || c.lines != lines || len(c.gaps)+c.backward+c.torn > 0 {
				t.Errorf("on disk: %v; want lines 0..%d exactly once", c, lines-1)
			}
			if !res.same || res.skipped != 0 {
				t.Errorf("the follower read %v (skipped %d), not what is on disk", res.followed, res.skipped)
			}
			if min := budget/maxSize - 2; res.stats.Rotations < min || res.stats.Dropped != 0 {
				t.Errorf("%d rotations, %d bytes dropped; want at least %d rotations and none dropped", res.stats.Rotations, res.stats.Dropped, min)
			}
			if limit := tc.blockLimit(l, res.files); res.blocks > limit {
				t.Errorf("%d bytes on disk, cap %d", res.blocks, limit)
			}
		})
	}
}

// TestFullSpeedSmallCap: a cap far under what the child writes keeps the
// newest lines, contiguous, within the cap; a follower that keeps up loses
// nothing the disk kept.
func TestFullSpeedSmallCap(t *testing.T) {
	for _, tc := range modeCases()[:2] {
		t.Run(tc.name, func(t *testing.T) {
			const maxSize, keep = 1 << 20, 3
			l := newLog(t, tc.dir(t), Options{MaxSize: maxSize, Keep: keep})
			budget := sequenceBudget()
			res := runSequence(t, l, budget)
			total := linesWritten(budget)
			// A reset (the rotator outrun, the log started afresh) keeps
			// what came after it, which may be short when it came late:
			// then only the run's being contiguous and the newest is sure.
			// A write the child makes in a reset's two-syscall window is
			// lost whole, so the newest line kept may be a few whole
			// writes short of the last one written.
			want := int64((keep - 1) * maxSize)
			if res.stats.Resets > 0 {
				want = lineLen
			}
			if c := res.check; !newestKept(c, total, res.stats) || len(c.gaps)+c.backward+c.torn > 0 || c.lines*lineLen < want {
				t.Errorf("on disk: %v (stats %+v); want a contiguous run of at least %d lines ending at %d", c, res.stats, want/lineLen, total-1)
			}
			if c := res.followed; !newestKept(c, total, res.stats) || c.backward+c.torn > 0 {
				t.Errorf("followed: %v (stats %+v); want no line twice and the last line %d", c, res.stats, total-1)
			}
			if limit := l.Limit() + tc.slack; res.blocks > tc.blockLimit(l, res.files) || res.sizes > limit {
				t.Errorf("on disk %d bytes allocated in %d files, %d in files; cap %d", res.blocks, res.files, res.sizes, limit)
			}
		})
	}
}

// linesWritten is how many lines the sequence writer writes for budget
// bytes: whole writes of batchLines lines, the last one past the budget.
func linesWritten(budget int64) int64 {
	const batch = batchLines * lineLen
	return (budget + batch - 1) / batch * batchLines
}

// newestKept reports whether c ends at the last of total lines written,
// or, when resets may have lost writes in their window (Stats.ResetLost
// counting none of it), at most two whole writes per reset before it.
func newestKept(c seqCheck, total int64, st Stats) bool {
	if c.last == total-1 {
		return true
	}
	short := total - 1 - c.last
	return st.Resets > 0 && st.ResetLost == 0 && short > 0 && short%batchLines == 0 && short <= st.Resets*2*batchLines
}

// TestFullSpeedResets: where only a reset can bring output.log back
// (ModePunch past ResetSize, and ModeTruncate at every rotation), lines
// are lost only in the reset's window: whole writes (runs of whole lines),
// at most one run per reset, never a line twice or torn, and the follower
// saw every line the disk kept, and no more than the resets lost.
func TestFullSpeedResets(t *testing.T) {
	cases := []struct {
		name  string
		force Mode
		want  Mode
	}{
		{"punch", ModeUnknown, ModePunch},
		{"truncate", ModeTruncate, ModeTruncate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			budget := sequenceBudget()
			const maxSize = 256 << 10
			keep := int(budget/maxSize) + 64 // each reset leaves a short chunk
			l := newLog(t, tmpfsDir(t), Options{MaxSize: maxSize, Keep: keep, ResetSize: 4 << 20, forceMode: tc.force})
			res := runSequence(t, l, budget)
			const batch = batchLines * lineLen
			total := linesWritten(budget)
			c := res.check
			if res.stats.Mode != tc.want || res.stats.Resets == 0 {
				t.Errorf("stats %+v: want mode %v with resets", res.stats, tc.want)
			}
			if c.backward > 0 || int64(len(c.gaps)) > res.stats.Resets {
				t.Errorf("on disk: %v; want no line twice, at most %d gaps", c, res.stats.Resets)
			}
			// ModeTruncate makes two files of most resets (a full chunk
			// and the rest), so it keeps less than the cap would allow.
			if tc.want == ModePunch && c.first != 0 {
				t.Errorf("on disk from line %d, want 0: the cap holds everything", c.first)
			}
			if c.torn > 0 && res.stats.ResetLost == 0 {
				t.Errorf("on disk: %d torn lines though no reset cut a write", c.torn)
			}
			// What is missing after the oldest line kept was lost by
			// resets: what they counted, and at most a couple of whole
			// writes in each one's window.
			if lost := total - c.first - c.lines; lost*lineLen > res.stats.ResetLost+res.stats.Resets*2*batch {
				t.Errorf("%d lines missing after line %d; the resets account for %d bytes and %d windows", lost, c.first, res.stats.ResetLost, res.stats.Resets)
			}
			if res.stats.ResetLost == 0 {
				for _, g := range c.gaps {
					if (g[1]-g[0]-1)%batchLines != 0 {
						t.Errorf("gap after line %d to %d is not whole writes of %d lines", g[0], g[1], batchLines)
					}
				}
				if c.last != total-1 && (c.last+1)%batchLines != 0 {
					t.Errorf("last line kept %d of %d: the writes after it were not lost whole", c.last, total)
				}
			}
			// A follower may read bytes before a reset loses them; it
			// then goes on at the first byte written after the truncate.
			if f := res.followed; res.unread > 0 || res.skipped != 0 || f.backward > 0 || int64(f.torn) > res.stats.Resets ||
				res.unkept*lineLen > res.stats.ResetLost+res.stats.Resets*2*batch {
				t.Errorf("the follower read %v (skipped %d): %d lines on disk unread, %d read that the disk lost; the disk has %v",
					f, res.skipped, res.unread, res.unkept, c)
			}
			if res.blocks > l.Limit()+4096 {
				t.Errorf("%d bytes on disk, cap %d", res.blocks, l.Limit())
			}
		})
	}
}
