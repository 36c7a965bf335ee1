package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// renamer rotates a log by renaming, as the terminal holder does.
type renamer struct {
	t    *testing.T
	path string
	keep int // rotated files kept
	f    *os.File
}

func newRenamer(t *testing.T, keep int) *renamer {
	r := &renamer{t: t, path: filepath.Join(t.TempDir(), "output.log"), keep: keep}
	r.open()
	t.Cleanup(func() { r.f.Close() })
	return r
}

func (r *renamer) open() {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	r.f = f
}

func (r *renamer) write(s string) {
	if _, err := r.f.WriteString(s); err != nil {
		r.t.Fatal(err)
	}
}

func (r *renamer) rotate() {
	r.f.Close()
	for i := r.keep - 1; i >= 1; i-- {
		if err := os.Rename(r.path+"."+strconv.Itoa(i), r.path+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.t.Fatal(err)
		}
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		r.t.Fatal(err)
	}
	r.open()
}

func readToEOF(t *testing.T, rd io.Reader) string {
	t.Helper()
	var b bytes.Buffer
	buf := make([]byte, 7) // small reads cross file boundaries
	for {
		n, err := rd.Read(buf)
		b.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestRenamedReaderStream(t *testing.T) {
	w := newRenamer(t, 1)
	w.write("one\ntwo\n")
	w.rotate()
	w.write("three\nfour\n")
	w.rotate() // "one two" is dropped
	w.write("five\nsix")
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "three\nfour\nfive\nsix"},
		{1, "six"},
		{2, "five\nsix"},
		{3, "four\nfive\nsix"},
		{10, "three\nfour\nfive\nsix"},
	} {
		r, err := OpenRenamed(w.path, 2, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := readToEOF(t, r); got != tc.want {
			t.Errorf("last %d lines: %q, want %q", tc.n, got, tc.want)
		}
		r.Close()
	}
}

// A follower reads on across renames and loses nothing.
func TestRenamedReaderFollows(t *testing.T) {
	w := newRenamer(t, 1)
	r, err := OpenRenamed(w.path, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var want, got bytes.Buffer
	for i := range 50 {
		line := fmt.Sprintf("line %d\n", i)
		w.write(line)
		want.WriteString(line)
		if i%7 == 3 {
			w.rotate()
		}
		if i%3 == 0 {
			got.WriteString(readToEOF(t, r))
		}
	}
	got.WriteString(readToEOF(t, r))
	if got.String() != want.String() {
		t.Fatalf("followed %q\nwant %q", got.String(), want.String())
	}
}

func TestRenamedReaderMissing(t *testing.T) {
	if _, err := OpenRenamed(filepath.Join(t.TempDir(), "output.log"), 2, 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want not exist", err)
	}
}

// A follower that falls several rotations behind reads the rotated files
// it missed, as long as they are kept.
func TestRenamedReaderCatchesUp(t *testing.T) {
	w := newRenamer(t, 4)
	r, err := OpenRenamed(w.path, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var want bytes.Buffer
	for i := range 4 {
		line := fmt.Sprintf("burst %d\n", i)
		w.write(line)
		want.WriteString(line)
		w.rotate()
	}
	w.write("last\n")
	want.WriteString("last\n")
	if got := readToEOF(t, r); got != want.String() {
		t.Fatalf("after 4 rotations at once: %q, want %q", got, want.String())
	}
	// Beyond what is kept, the follower goes on with the oldest kept.
	for i := range 6 {
		w.write(fmt.Sprintf("lost? %d\n", i))
		w.rotate()
	}
	w.write("end\n")
	got := readToEOF(t, r)
	if !strings.HasSuffix(got, "lost? 2\nlost? 3\nlost? 4\nlost? 5\nend\n") {
		t.Fatalf("after 6 rotations (4 kept): %q", got)
	}
}
