//go:build linux

package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"
)

// stampedLines reads the whole log and returns, for every whole line, its
// sequence number and the time its first byte was stamped with.
func stampedLines(t *testing.T, l *Log) (nums []int64, times []time.Time) {
	t.Helper()
	st, err := l.Stamps(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.NewReader(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := r.Offset()
	data := mustRead(t, r)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		n, err := strconv.ParseInt(string(data[:i]), 10, 64)
		if err != nil {
			t.Fatalf("line at %d: %q", start, data[:i])
		}
		nums = append(nums, n)
		times = append(times, st.TimeOf(start))
		start += int64(i + 1)
		data = data[i+1:]
	}
	return nums, times
}

// TestStampsAcrossRotationsAndRestarts writes batches of sequence lines,
// each seen at its own time, through rotations in every mode and two
// restarts of the Log: every line kept keeps the time of its batch.
func TestStampsAcrossRotationsAndRestarts(t *testing.T) {
	for _, mc := range modeCases() {
		t.Run(mc.name, func(t *testing.T) {
			dir := mc.dir(t)
			opt := Options{MaxSize: 4096, Keep: 3, Stamps: true, forceMode: mc.force, ResetSize: 16 << 10}
			l := newLog(t, dir, opt)
			w, err := OpenAppend(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			const batch = 50 // lines of 16 bytes
			var line int64
			want := map[int64]time.Time{}
			for i := 0; i < 60; i++ {
				if i == 20 || i == 40 {
					// The daemon restarts: a new Log takes over the files.
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					if l, err = Open(l.Path(), opt); err != nil {
						t.Fatal(err)
					}
					defer l.Close()
				}
				at := t0.Add(time.Duration(i) * time.Second)
				if _, err := w.Write(seqLines(line, batch)); err != nil {
					t.Fatal(err)
				}
				for j := line; j < line+batch; j++ {
					want[j] = at
				}
				line += batch
				l.Seen(at)
				if err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			nums, times := stampedLines(t, l)
			if len(nums) < 4096/16 {
				t.Fatalf("only %d lines kept", len(nums))
			}
			if nums[len(nums)-1] != line-1 {
				t.Fatalf("last line kept is %d, want %d", nums[len(nums)-1], line-1)
			}
			for i, n := range nums {
				if !times[i].Equal(want[n]) {
					t.Fatalf("line %d stamped %v, want %v", n, times[i], want[n])
				}
			}
			if st := statSize(t, l.Path()+StampSuffix); st > int64(len(stampMagic)+DefaultStampsMax*stampSize) {
				t.Errorf("stamp file is %d bytes", st)
			}
		})
	}
}

func statSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestStampsWhileClosed: what a child wrote while no Log kept times is
// stamped as seen when the next Log opens.
func TestStampsWhileClosed(t *testing.T) {
	dir := t.TempDir()
	opt := Options{MaxSize: 1 << 20, Stamps: true}
	l := newLog(t, dir, opt)
	w, err := OpenAppend(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	old := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	w.Write(seqLines(0, 10))
	l.Seen(old)
	l.Close()
	w.Write(seqLines(10, 10))
	before := time.Now()
	l, err = Open(l.Path(), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	after := time.Now()
	nums, times := stampedLines(t, l)
	if len(nums) != 20 {
		t.Fatalf("%d lines, want 20", len(nums))
	}
	for i, n := range nums {
		if n < 10 && !times[i].Equal(old) {
			t.Errorf("line %d stamped %v, want %v", n, times[i], old)
		}
		if n >= 10 && (times[i].Before(before) || times[i].After(after)) {
			t.Errorf("line %d written while closed stamped %v, want within the reopen (%v … %v)", n, times[i], before, after)
		}
	}
}

// TestStampsOfAnOlderLog: a log without a stamp file has no times; once a
// Log keeps them, what was there is of unknown time and what comes next
// is stamped.
func TestStampsOfAnOlderLog(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/output.log"
	if err := os.WriteFile(path, seqLines(0, 5), 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ro.Stamps(nil)
	ro.Close()
	if err != nil || st != nil {
		t.Fatalf("Stamps of a log without a stamp file = %v, %v; want nil, nil", st, err)
	}
	l, err := Open(path, Options{MaxSize: 1 << 20, Stamps: true, PriorUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w, _ := OpenAppend(path)
	defer w.Close()
	w.Write(seqLines(5, 5))
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l.Seen(at)
	st, err = l.Stamps(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.UnknownUntil(); got != 5*16 {
		t.Errorf("UnknownUntil = %d, want %d", got, 5*16)
	}
	if !st.TimeOf(0).IsZero() || !st.TimeOf(79).IsZero() {
		t.Errorf("the older bytes have times %v, %v", st.TimeOf(0), st.TimeOf(79))
	}
	if got := st.TimeOf(80); !got.Equal(at) {
		t.Errorf("new bytes stamped %v, want %v", got, at)
	}
	if got := st.OffsetAt(at); got != 80 {
		t.Errorf("OffsetAt(%v) = %d, want 80", at, got)
	}
}

// TestStampsCoalesceAndCompact: bursts within a millisecond share a record;
// the file stays within its bound however many bursts come, the newest
// keep their exact times and the older never get a later one.
func TestStampsCoalesceAndCompact(t *testing.T) {
	dir := t.TempDir()
	l := newLog(t, dir, Options{MaxSize: 1 << 20, Stamps: true, stampsMax: 16})
	w, _ := OpenAppend(l.Path())
	defer w.Close()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	w.Write(seqLines(0, 1))
	l.Seen(t0)
	w.Write(seqLines(1, 1))
	l.Seen(t0.Add(500 * time.Microsecond))
	st, _ := l.Stamps(nil)
	if len(st.recs) != 1 || st.recs[0].end != 32 || !st.TimeOf(16).Equal(t0) {
		t.Fatalf("two bursts 0.5 ms apart: %+v, want one record to 32 at %v", st.recs, t0)
	}
	want := map[int64]time.Time{0: t0, 1: t0}
	for i := int64(2); i < 300; i++ {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		w.Write(seqLines(i, 1))
		want[i] = at
		l.Seen(at)
		if size := statSize(t, l.Path()+StampSuffix); size > int64(len(stampMagic)+16*stampSize) {
			t.Fatalf("after %d bursts the stamp file is %d bytes", i, size)
		}
	}
	nums, times := stampedLines(t, l)
	if len(nums) != 300 {
		t.Fatalf("%d lines", len(nums))
	}
	for i, n := range nums {
		if times[i].After(want[n]) {
			t.Errorf("line %d stamped %v, later than it was seen (%v)", n, times[i], want[n])
		}
		if i > 0 && times[i].Before(times[i-1]) {
			t.Errorf("line %d stamped before line %d", n, nums[i-1])
		}
	}
	if last := len(nums) - 1; !times[last].Equal(want[nums[last]]) {
		t.Errorf("the newest line lost its exact time: %v, want %v", times[last], want[nums[last]])
	}
}

// TestStampsRefresh: a refresh reads what was added (and an extended last
// record) and agrees with a full read, across a compaction too.
func TestStampsRefresh(t *testing.T) {
	dir := t.TempDir()
	l := newLog(t, dir, Options{MaxSize: 1 << 20, Stamps: true, stampsMax: 32})
	w, _ := OpenAppend(l.Path())
	defer w.Close()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var prev *Stamps
	for i := int64(0); i < 100; i++ {
		w.Write(seqLines(i, 1))
		// Every third burst comes within the resolution of the one before.
		at := t0.Add(time.Duration(i) * time.Second)
		if i%3 == 2 {
			at = t0.Add(time.Duration(i-1)*time.Second + 100*time.Microsecond)
		}
		l.Seen(at)
		next, err := l.Stamps(prev)
		if err != nil {
			t.Fatal(err)
		}
		full, err := l.Stamps(nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(next.recs, next.oldest) != fmt.Sprint(full.recs, full.oldest) {
			t.Fatalf("after burst %d: refresh %v, full read %v", i, next.recs, full.recs)
		}
		prev = next
	}
}

// TestStampsDamagedFile: a stamp file damaged in the middle keeps what
// came before the damage; a file that is not one is started anew.
func TestStampsDamagedFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/output.log"
	if err := os.WriteFile(path, seqLines(0, 4), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	buf := []byte(stampMagic)
	buf = stamp{end: 0, at: stampOldest}.append(buf)
	buf = stamp{end: 32, at: at}.append(buf)
	buf = stamp{end: 16, at: at}.append(buf) // goes back: the damage
	buf = stamp{end: 64, at: at}.append(buf)
	if err := os.WriteFile(path+StampSuffix, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, Options{MaxSize: 1 << 20, Stamps: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Stamps(nil)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := st.TimeOf(0); got.UnixNano() != at {
		t.Errorf("the record before the damage was lost: %v", got)
	}
	if got := st.TimeOf(40); got.IsZero() || got.UnixNano() == at {
		t.Errorf("bytes after the damage should be stamped as seen at the open, got %v", got)
	}

	if err := os.WriteFile(path+StampSuffix, []byte("not stamps at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ro, err := Open(path, Options{}); err == nil {
		if _, err := ro.Stamps(nil); !errors.Is(err, errStampFile) {
			t.Errorf("Stamps of a foreign file: %v, want errStampFile", err)
		}
		ro.Close()
	}
	l, err = Open(path, Options{MaxSize: 1 << 20, Stamps: true, PriorUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err = l.Stamps(nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.UnknownUntil() != 64 {
		t.Errorf("a foreign stamp file: UnknownUntil %d, want 64 (all of the log)", st.UnknownUntil())
	}
	if perm := statMode(t, path+StampSuffix); perm != 0o600 {
		t.Errorf("stamp file mode %o, want 600", perm)
	}
}

func statMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestStampsKeepLowered: with fewer files kept after a restart, the files
// past log_keep are removed and the offsets still match the stamps.
func TestStampsKeepLowered(t *testing.T) {
	dir := collapseDir(t)
	l := newLog(t, dir, Options{MaxSize: 4096, Keep: 4, Stamps: true})
	w, _ := OpenAppend(l.Path())
	defer w.Close()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	want := map[int64]time.Time{}
	for i := int64(0); i < 20; i++ {
		w.Write(seqLines(i*64, 64))
		for j := i * 64; j < (i+1)*64; j++ {
			want[j] = t0.Add(time.Duration(i) * time.Second)
		}
		l.Seen(t0.Add(time.Duration(i) * time.Second))
		if err := l.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	l, err := Open(l.Path(), Options{MaxSize: 4096, Keep: 2, Stamps: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nums, times := stampedLines(t, l)
	if len(nums) == 0 {
		t.Fatal("no lines")
	}
	for i, n := range nums {
		if !times[i].Equal(want[n]) {
			t.Fatalf("line %d stamped %v, want %v", n, times[i], want[n])
		}
	}
}

// TestReaderAtLine: NewReaderAt positions by stamp offsets, LineStart says
// whether that is the start of a line.
func TestReaderAtLine(t *testing.T) {
	l := newLog(t, t.TempDir(), Options{})
	w, _ := OpenAppend(l.Path())
	defer w.Close()
	w.Write([]byte("one\ntwo\n"))
	for _, tc := range []struct {
		off   int64
		start bool
		rest  string
	}{{-5, true, "one\ntwo\n"}, {0, true, "one\ntwo\n"}, {2, false, "e\ntwo\n"}, {4, true, "two\n"}, {99, true, ""}} {
		r, err := l.NewReaderAt(tc.off)
		if err != nil {
			t.Fatal(err)
		}
		start, err := r.LineStart()
		if err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(onlyData{r})
		r.Close()
		if start != tc.start || string(rest) != tc.rest {
			t.Errorf("NewReaderAt(%d): line start %v, rest %q; want %v, %q", tc.off, start, rest, tc.start, tc.rest)
		}
	}
}

// onlyData reads a Reader until its first io.EOF.
type onlyData struct{ r *Reader }

func (o onlyData) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestStampsOfANewLog: the bytes a new log got before it was watched (a
// preflight's output, the child's first lines) are stamped as seen at Open.
func TestStampsOfANewLog(t *testing.T) {
	path := t.TempDir() + "/output.log"
	if err := os.WriteFile(path, seqLines(0, 3), 0o600); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	l, err := Open(path, Options{MaxSize: 1 << 20, Stamps: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := l.Stamps(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.TimeOf(0); got.Before(before) || got.After(time.Now()) || st.UnknownUntil() != 0 {
		t.Errorf("first bytes of a new log stamped %v (unknown until %d), want the time of Open", got, st.UnknownUntil())
	}
}

// TestStampsRefreshAfterUnknown: a refresh of a file that ends with the
// unknown run of an older log does not count that run twice.
func TestStampsRefreshAfterUnknown(t *testing.T) {
	path := t.TempDir() + "/output.log"
	if err := os.WriteFile(path, seqLines(0, 2), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, Options{MaxSize: 1 << 20, Stamps: true, PriorUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	first, err := l.Stamps(nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := OpenAppend(path)
	defer w.Close()
	w.Write(seqLines(2, 1))
	l.Seen(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	next, err := l.Stamps(first)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := l.Stamps(nil)
	if fmt.Sprint(next.recs) != fmt.Sprint(full.recs) || len(full.recs) != 2 {
		t.Errorf("refresh %v, full read %v; want the unknown run and one burst", next.recs, full.recs)
	}
}

// TestStampsOverALongerTemporaryFile: the stamp file is written into its
// temporary file as it finds it (a new session's directory holds it
// empty; a crash can leave one longer), and holds what was written alone.
func TestStampsOverALongerTemporaryFile(t *testing.T) {
	for _, old := range [][]byte{nil, bytes.Repeat([]byte{0xee}, 4096)} {
		path := t.TempDir() + "/output.log"
		if err := os.WriteFile(path, seqLines(0, 3), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+StampSuffix+".tmp", old, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Open(path, Options{MaxSize: 1 << 20, Stamps: true})
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path + StampSuffix)
		if err != nil {
			t.Fatal(err)
		}
		// The magic and one record, the oldest offset's, nothing after.
		if want := len(stampMagic) + 2*stampSize; len(data) != want {
			t.Errorf("old temporary file of %d bytes: the stamp file holds %d bytes (%x), want %d", len(old), len(data), data, want)
		}
		st, err := l.Stamps(nil)
		if err != nil || st.UnknownUntil() != 0 {
			t.Errorf("old temporary file of %d bytes: stamps %v unknown until %d", len(old), err, st.UnknownUntil())
		}
		l.Close()
	}
}
