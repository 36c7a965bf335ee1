//go:build linux

package logfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// The test binary doubles as the child that writes the log.
const (
	helperEnv      = "LOGFILE_TEST_WRITER"
	helperBytesEnv = "LOGFILE_TEST_BYTES"
	helperTimeEnv  = "LOGFILE_TEST_SECONDS"
)

// lineLen is the length of one sequence line: 15 digits and a newline.
// It divides every block size, so chunk boundaries fall between lines.
const lineLen = 16

// batchLines is how many lines the writer puts in one write(2): a lost
// write is a run of whole lines. It is 10^4 so that a batch is a template
// of its low four digits with the high digits stamped in, fast enough to
// outrun the rotator even in a -race binary.
const batchLines = 10000

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "seq" {
		os.Exit(writeSequence())
	}
	goleak.VerifyTestMain(m)
}

// writeSequence writes lines 000000000000000, 000000000000001, … to stdout
// at full speed, in writes of batchLines whole lines, until it has written
// LOGFILE_TEST_BYTES bytes (rounded up to a write) or LOGFILE_TEST_SECONDS
// have passed. It prints nothing else.
func writeSequence() int {
	limit, _ := strconv.ParseInt(os.Getenv(helperBytesEnv), 10, 64)
	secs, _ := strconv.ParseFloat(os.Getenv(helperTimeEnv), 64)
	var deadline time.Time
	if secs > 0 {
		deadline = time.Now().Add(time.Duration(secs * float64(time.Second)))
	}
	buf := make([]byte, batchLines*lineLen)
	for i := 0; i < batchLines; i++ {
		copy(buf[i*lineLen+lineLen-5:], fmt.Sprintf("%04d\n", i))
	}
	var written int64
	for batch := int64(0); (limit <= 0 || written < limit) && (deadline.IsZero() || time.Now().Before(deadline)); batch++ {
		high := []byte(fmt.Sprintf("%011d", batch))
		for i := 0; i < batchLines; i++ {
			copy(buf[i*lineLen:], high)
		}
		if _, err := os.Stdout.Write(buf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		written += int64(len(buf))
	}
	return 0
}

// startWriter runs cmd with stdout and stderr on a new O_APPEND descriptor
// of path, the way the daemon starts a session's child.
func startWriter(t testing.TB, path string, cmd *exec.Cmd) {
	t.Helper()
	f, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// seqWriter returns the sequence writer as a command.
func seqWriter(t testing.TB, bytes int64, d time.Duration) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=seq", "GORACE=atexit_sleep_ms=0",
		helperBytesEnv+"="+strconv.FormatInt(bytes, 10),
		helperTimeEnv+"="+strconv.FormatFloat(d.Seconds(), 'f', 3, 64))
	return cmd
}

// notifyOnWrite drives l.Notify from an inotify watch of its file, as the
// daemon does. The returned function stops it.
func notifyOnWrite(t testing.TB, l *Log) func() {
	return onWrite(t, l.Path(), l.Notify)
}

// onWrite calls fn on every write event of path (and on an inotify queue
// overflow). The returned function stops it.
func onWrite(t testing.TB, path string, fn func()) func() {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(path); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Write) {
					fn()
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				if errors.Is(err, fsnotify.ErrEventOverflow) {
					fn()
				}
			}
		}
	}()
	return func() {
		w.Close()
		wg.Wait()
	}
}

// seqCheck is what a stream of sequence lines holds.
type seqCheck struct {
	lines      int64
	first      int64
	last       int64
	gaps       [][2]int64 // last line before a gap, first line after it
	backward   int        // lines not greater than the one before: duplicates or reordering
	torn       int        // lines that are not 15 digits and a newline
	tornSample string
}

func (c seqCheck) String() string {
	return fmt.Sprintf("%d lines %d..%d, %d gaps %v, %d backward, %d torn %q",
		c.lines, c.first, c.last, len(c.gaps), firstGaps(c.gaps), c.backward, c.torn, c.tornSample)
}

func firstGaps(g [][2]int64) [][2]int64 {
	if len(g) > 5 {
		return g[:5]
	}
	return g
}

// checkSequence reads a stream of sequence lines.
func checkSequence(r io.Reader) (seqCheck, error) {
	c := seqCheck{first: -1, last: -1}
	br := bufio.NewReaderSize(r, 256<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			n, ok := parseLine(line)
			switch {
			case !ok:
				c.torn++
				if c.tornSample == "" {
					c.tornSample = string(line[:min(len(line), 40)])
				}
			case c.last < 0:
				c.first = n
			case n <= c.last:
				c.backward++
			case n != c.last+1:
				c.gaps = append(c.gaps, [2]int64{c.last, n})
			}
			if ok {
				c.last = n
				c.lines++
			}
		}
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line this long is torn; read past it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			c.torn++
			continue
		}
		if err != nil {
			return c, err
		}
	}
}

func parseLine(b []byte) (int64, bool) {
	if len(b) != lineLen || b[lineLen-1] != '\n' {
		return 0, false
	}
	var n int64
	for _, d := range b[:lineLen-1] {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// rawStream concatenates the files on disk in order: output.log.<keep-1>
// … output.log.1, then output.log from its first data byte on (past the
// hole a punching rotator leaves, and the zeros of the block that hole
// ends in). It is what a person gets with cat, hole aside.
func rawStream(t testing.TB, path string, keep int) io.Reader {
	t.Helper()
	var rs []io.Reader
	for i := keep - 1; i >= 1; i-- {
		data, err := os.ReadFile(path + "." + strconv.Itoa(i))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, bytes.NewReader(data))
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	start := dataStart(f, fi.Size())
	blk := blockSize(f)
	zeros := make([]byte, min(blk-start%blk, fi.Size()-start))
	if _, err := f.ReadAt(zeros, start); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	start += int64(len(zeros) - len(bytes.TrimLeft(zeros, "\x00")))
	rs = append(rs, io.NewSectionReader(f, start, fi.Size()-start))
	return io.MultiReader(rs...)
}

// readAll reads the whole log through a Reader from its oldest byte.
func readAll(t testing.TB, l *Log) []byte {
	t.Helper()
	r, err := l.NewReader(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Filesystem magic numbers (statfs f_type).
const (
	ext4Magic  = 0xEF53
	xfsMagic   = 0x58465342
	tmpfsMagic = 0x01021994
)

func fsType(t testing.TB, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Type)
}

// collapseDir returns a directory on a filesystem with COLLAPSE_RANGE.
func collapseDir(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	if ft := fsType(t, d); ft != ext4Magic && ft != xfsMagic {
		t.Skipf("the temporary directory is on filesystem type %#x, not ext4 or XFS: no COLLAPSE_RANGE to test", ft)
	}
	return d
}

// tmpfsDir returns a directory on tmpfs (no COLLAPSE_RANGE, PUNCH_HOLE
// supported): /dev/shm, or a tmpfs mounted for the test.
func tmpfsDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && fsType(t, "/dev/shm") == tmpfsMagic {
		d, err := os.MkdirTemp("/dev/shm", "logfile")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	d := t.TempDir()
	if err := unix.Mount("tmpfs", d, "tmpfs", 0, "size=1g,mode=0700"); err != nil {
		t.Skipf("no tmpfs at /dev/shm and cannot mount one (%v): the fallback needs a filesystem without COLLAPSE_RANGE", err)
	}
	t.Cleanup(func() { unix.Unmount(d, unix.MNT_DETACH) })
	return d
}

// vmRSS returns a field of /proc/self/status in bytes (VmRSS, VmHWM).
func procStatus(t testing.TB, field string) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeakRSS makes VmHWM start again from the current RSS.
func resetPeakRSS(t testing.TB) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("reset peak RSS: %v", err)
	}
}

// newLog creates an empty output.log in dir and opens it.
func newLog(t testing.TB, dir string, opt Options) *Log {
	t.Helper()
	path := filepath.Join(dir, "output.log")
	f, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	l, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
