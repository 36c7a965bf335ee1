package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// smallTmpfs mounts a 64 KiB tmpfs in a shared directory for the test.
func smallTmpfs(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	dir := filepath.Join(sharedDir(t), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): the full-disk test needs one", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes into dir until the filesystem has no byte left.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for size := 4096; size > 0; size /= 2 {
		for {
			if _, err := f.Write(make([]byte, size)); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}

// TestFullDisk fills the filesystem of a project and of a state directory:
// every write fails with a clear error and leaves the previous file whole,
// with no temporary file behind.
func TestFullDisk(t *testing.T) {
	mnt := smallTmpfs(t)
	u := newTestUser(t)
	project := filepath.Join(mnt, "proj")
	if err := os.MkdirAll(filepath.Join(project, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{project, filepath.Join(project, ".git"), filepath.Join(project, ".git", "info")} {
		chown(t, d, u)
	}
	records := filepath.Join(mnt, "state")
	if err := EnsureDir(records); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*Owner{&u.Owner, nil} {
		p, err := OpenProject(project, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.EnsureStateDir(); err != nil {
			t.Fatal(err)
		}
		if err := p.SaveSessionState(&SessionState{CurrentPlan: "before"}); err != nil {
			t.Fatal(err)
		}
		if err := p.SaveHandoff(&Handoff{SessionID: "before"}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendProgress("", ProgressEntry{Time: testNow, SessionID: "before"}); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(filepath.Join(records, "session.json"), map[string]string{"id": "before"}); err != nil {
			t.Fatal(err)
		}
		snapshotBefore := snapshot(t, project) + snapshot(t, records)
		fill(t, mnt)

		ops := map[string]func() error{
			"session state": func() error { return p.SaveSessionState(&SessionState{CurrentPlan: strings.Repeat("after ", 300)}) },
			"handoff": func() error {
				return p.SaveHandoff(&Handoff{SessionID: "after", LogTail: []string{strings.Repeat("x", 900)}})
			},
			"progress": func() error {
				// Larger than what is left of the log's last block: an
				// append that fits there is on disk, full or not.
				notes := make([]string, 40)
				for i := range notes {
					notes[i] = strings.Repeat("n", 400)
				}
				_, err := p.AppendProgress("", ProgressEntry{Time: testNow, SessionID: "after", Notes: notes})
				return err
			},
			"context": func() error { return p.WriteContext(ContextInput{SessionID: "after", Now: testNow}) },
			"lock":    func() error { return p.CreateLock(&Lock{SessionID: "after"}) },
			"record": func() error {
				return WriteJSON(filepath.Join(records, "session.json"), map[string]string{"id": strings.Repeat("after", 900)})
			},
		}
		for name, op := range ops {
			err := op()
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left on device") {
				t.Errorf("owner %v, %s: got %v, want no space left on device", o, name, err)
			}
		}
		if got := snapshot(t, project) + snapshot(t, records); got != snapshotBefore {
			t.Errorf("owner %v: files changed on a full disk:\nbefore:\n%s\nafter:\n%s", o, snapshotBefore, got)
		}
		if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(project, DirName)); err != nil {
			t.Fatal(err)
		}
	}
}
