package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivateDir: a directory only the daemon's user (or root) can change
// passes; one writable by others, under a directory writable by others or
// of another user, or a symlink, does not.
func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(base, "good")
	if err := os.Mkdir(good, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := PrivateDir(good); err != nil {
		t.Errorf("a private directory: %v", err)
	}
	open := filepath.Join(base, "open")
	inOpen := filepath.Join(open, "state")
	sticky := filepath.Join(base, "sticky")
	inSticky := filepath.Join(sticky, "state")
	for _, d := range []string{open, inOpen, sticky, inSticky} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if err := PrivateDir(inOpen); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("under a directory anyone can write: %v", err)
	}
	if err := PrivateDir(open); err == nil {
		t.Error("a directory anyone can write passed")
	}
	if err := PrivateDir(inSticky); err != nil {
		t.Errorf("under a sticky directory (as /tmp): %v", err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if err := PrivateDir(link); err == nil {
		t.Error("a symlink passed")
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		in := filepath.Join(other, "state")
		if err := os.Mkdir(in, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 54321, 54321); err != nil {
			t.Fatal(err)
		}
		if err := PrivateDir(in); err == nil || !strings.Contains(err.Error(), "uid 54321") {
			t.Errorf("under another user's directory: %v", err)
		}
	}
}
