package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestWriteFile(t *testing.T) {
	old := syscall.Umask(0o077) // the file mode must not depend on the umask
	defer syscall.Umask(old)
	for _, perm := range []os.FileMode{0o600, 0o644} {
		dir := t.TempDir()
		path := filepath.Join(dir, "f.json")
		if err := WriteFile(path, []byte("one"), perm); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(path, []byte("two"), perm); err != nil {
			t.Fatal(err)
		}
		if got := readTestFile(t, path); got != "two" {
			t.Errorf("content: got %q, want %q", got, "two")
		}
		if got := mode(t, path); got != perm {
			t.Errorf("mode: got %v, want %v", got, perm)
		}
		if got := tempFiles(t, dir); len(got) != 0 {
			t.Errorf("temporary files left: got %v, want none", got)
		}
	}
}

func TestWriteFileFailureKeepsPrevious(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) (path string)
	}{
		{"directory missing", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "missing", "f.json")
		}},
		{"rename onto a directory", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "f.json")
			writeTestFile(t, filepath.Join(path, "inside"), "previous")
			return path
		}},
		{"fsync fails (full disk)", func(t *testing.T, dir string) string {
			fsyncFD = func(int) error { return syscall.ENOSPC }
			t.Cleanup(func() { fsyncFD = unix.Fsync })
			path := filepath.Join(dir, "f.json")
			writeTestFile(t, path, "previous")
			return path
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tt.setup(t, dir)
			before := snapshot(t, dir)
			err := WriteFile(path, []byte("new"), 0o600)
			if err == nil {
				t.Fatal("got nil error, want one")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if got := snapshot(t, dir); got != before {
				t.Errorf("directory after the failed write:\n%s\nwant it unchanged:\n%s", got, before)
			}
		})
	}
}

// snapshot describes every file under dir with its content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p)
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" = " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteJSONFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	v := struct {
		A string `json:"a_b"`
		N []int  `json:"n"`
	}{"x", []int{1}}
	if err := WriteJSON(path, v); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a_b\": \"x\",\n  \"n\": [\n    1\n  ]\n}\n"
	if got := readTestFile(t, path); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := mode(t, path); got != 0o600 {
		t.Errorf("mode: got %v, want %v", got, os.FileMode(0o600))
	}
}

func TestReadJSON(t *testing.T) {
	type doc struct {
		N int `json:"n"`
	}
	tests := []struct {
		name    string
		content *string // nil: no file
		want    doc
		corrupt bool
		errHas  string
	}{
		{name: "valid", content: ptr(`{"n": 3, "unknown": true}`), want: doc{N: 3}},
		{name: "missing", content: nil},
		{name: "empty", content: ptr(""), corrupt: true, errHas: "empty"},
		{name: "blank", content: ptr(" \n"), corrupt: true, errHas: "empty"},
		{name: "null", content: ptr("null"), corrupt: true, errHas: "null"},
		{name: "truncated", content: ptr(`{"n": 3`), corrupt: true, errHas: "truncated"},
		{name: "not JSON", content: ptr("n = 3\n"), corrupt: true, errHas: "line 1, column 2"},
		{name: "wrong type", content: ptr("{\n  \"n\": \"x\"\n}"), corrupt: true, errHas: "line 2, column"},
		{name: "trailing garbage", content: ptr(`{"n": 3} x`), corrupt: true},
		{name: "array", content: ptr(`[1]`), corrupt: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "doc.json")
			if tt.content != nil {
				writeTestFile(t, path, *tt.content)
			}
			var got doc
			err := ReadJSON(path, &got)
			switch {
			case tt.content == nil:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("got %v, want an error wrapping fs.ErrNotExist", err)
				}
				return
			case !tt.corrupt:
				if err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Errorf("got %v, want %v", got, tt.want)
				}
				return
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want a *CorruptError matching ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("error %q does not say %q", err, tt.errHas)
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("corrupt file still in place: %v", err)
			}
			kept := corruptCopies(t, path)
			if len(kept) != 1 || kept[0] != ce.KeptAs {
				t.Fatalf("kept copies: got %v, want [%s]", kept, ce.KeptAs)
			}
			if got := readTestFile(t, ce.KeptAs); got != *tt.content {
				t.Errorf("kept content: got %q, want %q", got, *tt.content)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), ce.KeptAs) {
				t.Errorf("error %q does not name the file and where it was kept", err)
			}
		})
	}
}

func TestReadJSONKeepsEarlierCorruptCopies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.json")
	var kept []string
	for i := range 3 {
		writeTestFile(t, path, strings.Repeat("x", i+1))
		var v map[string]any
		var ce *CorruptError
		if err := ReadJSON(path, &v); !errors.As(err, &ce) {
			t.Fatalf("got %v, want a *CorruptError", err)
		}
		kept = append(kept, ce.KeptAs)
	}
	if got := corruptCopies(t, path); len(got) != 3 {
		t.Errorf("kept copies: got %v, want 3 (%v)", got, kept)
	}
	for i, k := range kept {
		if got, want := readTestFile(t, k), strings.Repeat("x", i+1); got != want {
			t.Errorf("%s: got %q, want %q", k, got, want)
		}
	}
}

func TestEnsureDir(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	if got := mode(t, dir); got != 0o700 {
		t.Errorf("existing dir: got %v, want %v", got, os.FileMode(0o700))
	}
	fresh := filepath.Join(t.TempDir(), "c", "d")
	if err := EnsureDir(fresh); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{fresh, filepath.Dir(fresh)} {
		if got := mode(t, d); got != 0o700 {
			t.Errorf("%s: got %v, want %v", d, got, os.FileMode(0o700))
		}
	}
}

func ptr[T any](v T) *T { return &v }

type failingJSON struct{}

func (failingJSON) MarshalJSON() ([]byte, error) { return nil, errors.New("cannot encode") }

// TestMarshalJSONIsMarshalIndent: the reused encoder writes what
// json.MarshalIndent does, and a newline, whatever came before it (a
// failed encoding, a large one, the same encoder again).
func TestMarshalJSONIsMarshalIndent(t *testing.T) {
	big := strings.Repeat("x", maxKeptEncoding+1)
	values := []any{
		map[string]any{"b": []int{1, 2}, "a": "<tag> & \u2028", "c": map[string]any{}, "d": []string{}},
		struct {
			N    int               `json:"n"`
			S    string            `json:"s,omitempty"`
			Tags map[string]string `json:"tags"`
			T    time.Time         `json:"t"`
		}{N: 3, Tags: map[string]string{"z": "1", "y": "2"}, T: time.Unix(1, 5).UTC()},
		big,
		"after the big one",
		nil,
		[]any{1.5, true, nil, "é"},
	}
	for i := 0; i < 3; i++ { // again, through encoders used before
		for _, v := range values {
			want, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			got, err := marshalJSON(v)
			if err != nil {
				t.Fatalf("marshalJSON(%.40v): %v", v, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("marshalJSON(%.40v) =\n%.200s\nwant\n%.200s", v, got, want)
			}
		}
		if _, err := marshalJSON(failingJSON{}); err == nil {
			t.Fatal("marshalJSON of a value that cannot be encoded: no error")
		}
	}
	// What it returns is the caller's: the next encoding does not touch it.
	first, _ := marshalJSON("first")
	_, _ = marshalJSON("second, longer than the first")
	if string(first) != "\"first\"\n" {
		t.Fatalf("an earlier result changed to %q", first)
	}
}
