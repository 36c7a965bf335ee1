package state

import (
	"os"
	"path/filepath"
	"testing"
)

// RemoveInSessions removes the file from each session's directory, and
// nothing a symlink leads to: a session directory that is a symlink, or a
// symlink in the file's place, takes nothing elsewhere with it.
func TestRemoveInSessionsFollowsNoSymlink(t *testing.T) {
	state := t.TempDir()
	elsewhere := t.TempDir()
	victim := filepath.Join(elsewhere, "environ")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(victim, []byte("keep"), 0o600))
	sessions := filepath.Join(state, "sessions")
	must(os.MkdirAll(filepath.Join(sessions, "a"), 0o700))
	must(os.WriteFile(filepath.Join(sessions, "a", "environ"), []byte("K=V\x00"), 0o600))
	must(os.Symlink(elsewhere, filepath.Join(sessions, "b")))
	must(os.MkdirAll(filepath.Join(sessions, "c"), 0o700))
	must(os.Symlink(victim, filepath.Join(sessions, "c", "environ")))
	must(os.MkdirAll(filepath.Join(sessions, "d"), 0o700)) // none to remove

	if err := RemoveInSessions(state, "environ"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(sessions, "a", "environ"), filepath.Join(sessions, "c", "environ")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", p, err)
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Errorf("the file a symlink led to: %q, %v; want it untouched", b, err)
	}
}
