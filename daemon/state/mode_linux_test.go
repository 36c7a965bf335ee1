package state

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadUmask reads the umask the process has.
func TestReadUmask(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	if m, ok := readUmask(); !ok || m != 0o027 {
		t.Errorf("readUmask() = %o, %v; want 027, true", m, ok)
	}
}

// TestWritesSetTheirMode: a write skips the chmod only when the file has
// its mode already; a spare whose mode was changed, and a new file whose
// mode the umask cut, get theirs.
func TestWritesSetTheirMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.json")
	if err := WriteJSONReusing(path, map[string]int{"seq": 1}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONReusing(path, map[string]int{"seq": 2}); err != nil {
		t.Fatal(err)
	}
	spare := filepath.Join(dir, ".session.json"+spareMark)
	if err := os.Chmod(spare, 0o644|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONReusing(path, map[string]int{"seq": 3}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode() != 0o600 {
		t.Errorf("written over a spare of mode 4644: %v (%v), want 0600", fi.Mode(), err)
	}
	// A file made where the umask cuts 0600 (tempMode as read then).
	saved := tempMode
	defer func() { tempMode = saved }()
	tempMode = func() os.FileMode { return 0o400 }
	old := syscall.Umask(0o277)
	other := filepath.Join(dir, "handoff.json")
	err := WriteFile(other, []byte("{}\n"), 0o600)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(other); err != nil || fi.Mode() != 0o600 {
		t.Errorf("a new file: %v (%v), want 0600", fi.Mode(), err)
	}
}
