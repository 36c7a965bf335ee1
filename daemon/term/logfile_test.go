package term

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogRotation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int64
		keep      int
		writes    []string
		want      string   // the current log
		rotated   []string // .1, .2, ...
		notExists int      // this rotation must not exist
	}{
		{"no cap", 0, 3, []string{"aaaa", "bbbb"}, "aaaabbbb", nil, 1},
		{"exact fit", 8, 1, []string{"aaaa", "bbbb"}, "aaaabbbb", nil, 1},
		{"split write", 5, 2, []string{"abcdefghijkl"}, "kl", []string{"fghij", "abcde"}, 3},
		{"keep one", 4, 1, []string{"1111", "2222", "3333"}, "3333", []string{"2222"}, 2},
		{"keep none", 4, 0, []string{"1111", "2222", "33"}, "33", nil, 1},
		{"many small", 3, 2, []string{"a", "b", "c", "d", "e", "f", "g"}, "g", []string{"def", "abc"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "output.log")
			l, err := openLog(path, tc.max, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.writes {
				if n, err := l.Write([]byte(w)); err != nil || n != len(w) {
					t.Fatalf("write %q: %d, %v", w, n, err)
				}
			}
			l.Close()
			if got, _ := os.ReadFile(path); string(got) != tc.want {
				t.Errorf("log %q, want %q", got, tc.want)
			}
			for i, want := range tc.rotated {
				got, err := os.ReadFile(l.rotated(i + 1))
				if err != nil || string(got) != want {
					t.Errorf("%s: %q, %v; want %q", l.rotated(i+1), got, err, want)
				}
			}
			if _, err := os.Stat(l.rotated(tc.notExists)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists", l.rotated(tc.notExists))
			}
			fi, _ := os.Stat(path)
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v", fi.Mode())
			}
		})
	}
}

// A log that is already over the cap when the holder starts is rotated
// before anything is added to it; appends go to the end of an existing one.
func TestLogReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "output.log")
	if err := os.WriteFile(path, []byte("old old old"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := openLog(path, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	l.Write([]byte(" new"))
	l.Close()
	if got, _ := os.ReadFile(path); string(got) != "old old old new" {
		t.Fatalf("appended log %q", got)
	}
	l, _ = openLog(path, 10, 1)
	l.Write([]byte("x"))
	l.Close()
	if got, _ := os.ReadFile(path); string(got) != "x" {
		t.Fatalf("log %q after start over the cap", got)
	}
	if got, _ := os.ReadFile(path + ".1"); string(got) != "old old old new" {
		t.Fatalf("rotated %q", got)
	}
}

// A failed rotation keeps the output in the current log rather than lose
// it, and rotation resumes when it can.
func TestLogRotationFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "output.log")
	l, _ := openLog(path, 4, 1)
	l.Write([]byte("1234"))
	// A directory where the rotated log goes: the rename fails, for root too.
	if err := os.MkdirAll(filepath.Join(path+".1", "in-the-way"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("5")); err == nil || !strings.Contains(err.Error(), "rotate") {
		t.Fatalf("write with the rotated log's name taken: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "12345" {
		t.Fatalf("log after a failed rotation = %q, want the output kept", got)
	}
	if err := os.RemoveAll(path + ".1"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("6")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	got, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	if !bytes.Equal(got, []byte("6")) || string(old) != "12345" {
		t.Fatalf("log %q, rotated %q", got, old)
	}
}
