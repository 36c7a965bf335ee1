package session

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSeekTail(t *testing.T) {
	tests := []struct {
		content string
		n       int
		want    string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc\n", 10, "a\nb\nc\n"},
		{"", 3, ""},
		{"only\n", 1, "only\n"},
		{strings.Repeat("x\n", 20000) + "last\n", 1, "last\n"},
	}
	for _, tt := range tests {
		p := filepath.Join(t.TempDir(), "log")
		os.WriteFile(p, []byte(tt.content), 0o600)
		f, _ := os.Open(p)
		if err := SeekTail(f, tt.n); err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(f)
		f.Close()
		if string(got) != tt.want {
			t.Errorf("tail %d of %.20q = %q, want %q", tt.n, tt.content, got, tt.want)
		}
	}
}
