//go:build linux

package logfile

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// writeRotating appends data to l's file in pieces, rotating after each.
func writeRotating(t *testing.T, l *Log, data []byte, piece int) {
	t.Helper()
	w, err := OpenAppend(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for len(data) > 0 {
		n := min(piece, len(data))
		if _, err := w.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
		if err := l.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
}

// mixedLines returns lines of random lengths: empty ones, short ones, and
// some longer than a rotated file, so lines span files.
func mixedLines(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		var size int
		switch rng.IntN(10) {
		case 0:
			size = 0
		case 1:
			size = 4096 + rng.IntN(9000)
		default:
			size = rng.IntN(200)
		}
		for j := 0; j < size; j++ {
			b.WriteByte(byte('a' + (i+j)%26))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// refTailStart is the offset in kept where its last n lines start.
func refTailStart(kept []byte, n int) int {
	body := bytes.TrimSuffix(kept, []byte("\n"))
	count := 0
	for i := len(body) - 1; i >= 0; i-- {
		if body[i] == '\n' {
			count++
			if count == n {
				return i + 1
			}
		}
	}
	return 0
}

// refTail is TailLines computed on the kept bytes in memory.
func refTail(kept []byte, n, maxBytes int) []string {
	region := kept[refTailStart(kept, n):]
	cut := len(region) > maxBytes
	if cut {
		region = region[len(region)-maxBytes:]
	}
	region = bytes.TrimSuffix(region, []byte("\n"))
	if len(region) == 0 {
		return []string{}
	}
	parts := strings.Split(string(region), "\n")
	if cut && len(parts) > 1 {
		parts = parts[1:]
	}
	return parts
}

func TestTailLinesAcrossFiles(t *testing.T) {
	for _, tc := range modeCases()[:2] {
		t.Run(tc.name, func(t *testing.T) {
			l := newLog(t, tc.dir(t), Options{MaxSize: 4096, Keep: 12})
			written := mixedLines(7, 900)
			writeRotating(t, l, written, 3000)
			written = append(written, "a last line without a newline"...)
			writeRotating(t, l, []byte("a last line without a newline"), 100)
			kept := readAll(t, l)
			if !bytes.HasSuffix(written, kept) || len(kept) < 11*4096 {
				t.Fatalf("kept %d bytes, not a suffix of the %d written or shorter than the rotated files", len(kept), len(written))
			}
			for _, n := range []int{1, 2, 3, 7, 40, 200, 5000} {
				for _, maxBytes := range []int{10, 5000, 1 << 20} {
					got, err := l.TailLines(n, maxBytes)
					if err != nil {
						t.Fatal(err)
					}
					if want := refTail(kept, n, maxBytes); !slices.Equal(got, want) {
						t.Errorf("TailLines(%d, %d): got %d lines, want %d (first got %.40q, want %.40q)",
							n, maxBytes, len(got), len(want), first(got), first(want))
					}
				}
				r, err := l.NewReader(n)
				if err != nil {
					t.Fatal(err)
				}
				data, err := io.ReadAll(r)
				r.Close()
				if err != nil {
					t.Fatal(err)
				}
				if want := kept[refTailStart(kept, n):]; !bytes.Equal(data, want) {
					t.Errorf("NewReader(%d) read %d bytes, want the last %d lines (%d bytes)", n, len(data), n, len(want))
				}
			}
		})
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func TestTailLinesEmptyAndShort(t *testing.T) {
	l := newLog(t, t.TempDir(), Options{MaxSize: 4096})
	if got, err := l.TailLines(5, 1000); err != nil || len(got) != 0 {
		t.Errorf("empty log: %q, %v; want no lines", got, err)
	}
	writeRotating(t, l, []byte("one\n\nthree\n"), 100)
	got, err := l.TailLines(5, 1000)
	if err != nil || !slices.Equal(got, []string{"one", "", "three"}) {
		t.Errorf("short log: %q, %v", got, err)
	}
	if got, _ := l.TailLines(0, 1000); len(got) != 0 {
		t.Errorf("TailLines(0) = %q, want none", got)
	}
	r, err := l.NewReader(0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := r.Read(make([]byte, 10)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("reader at the end read %d, %v; want EOF", n, err)
	}
	writeRotating(t, l, []byte("four\n"), 100)
	if data, _ := io.ReadAll(r); string(data) != "four\n" {
		t.Errorf("reader at the end then read %q, want the new line", data)
	}
}

// TestReaderSkipsWhatLeftTheDisk: a reader that falls behind the last kept
// file continues at the oldest kept byte and says how much it missed.
func TestReaderSkipsWhatLeftTheDisk(t *testing.T) {
	l := newLog(t, t.TempDir(), Options{MaxSize: 4096, Keep: 3})
	writeRotating(t, l, seqLines(0, 100), 4096)
	r, err := l.NewReader(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := make([]byte, lineLen)
	if _, err := io.ReadFull(r, head); err != nil || string(head) != "000000000000000\n" {
		t.Fatalf("first line %q, %v", head, err)
	}
	writeRotating(t, l, seqLines(100, 5000), 4096)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkSequence(bytes.NewReader(rest))
	if err != nil {
		t.Fatal(err)
	}
	skippedLines := r.Skipped() / lineLen
	if r.Skipped()%lineLen != 0 || c.first != 1+skippedLines || c.last != 5099 || len(c.gaps)+c.torn+c.backward > 0 {
		t.Errorf("after skipping %d bytes read %v; want a run from line %d to 5099", r.Skipped(), c, 1+skippedLines)
	}
	if r.Skipped() == 0 {
		t.Error("Skipped() = 0 after the reader's bytes left the disk")
	}
}

// TestReaderOutlivesClose: a follower may finish reading after the daemon
// closed the session's Log.
func TestReaderOutlivesClose(t *testing.T) {
	l := newLog(t, t.TempDir(), Options{MaxSize: 4096, Keep: 3})
	writeRotating(t, l, seqLines(0, 600), 1000)
	r, err := l.NewReader(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Rotate(); err == nil {
		t.Error("Rotate after Close succeeded")
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := checkSequence(bytes.NewReader(data)); c.last != 599 || len(c.gaps) > 0 {
		t.Errorf("read after Close: %v", c)
	}
}
