package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAKilledDaemonsTemporaryDirectoryIsRemovedByTheNext: the watcher's
// directory in $TMPDIR is named for the state dir, so that the one a
// daemon killed with SIGKILL leaves is removed by the next daemon of that
// state dir, not left for good; a file of that name that is not the
// daemon's is left alone.
func TestAKilledDaemonsTemporaryDirectoryIsRemovedByTheNext(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	stateDir := filepath.Join(t.TempDir(), "state")
	watchDirs := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "sessiond-*watch*"))
		return m
	}
	// A daemon with a session in a git project that has had a checkpoint:
	// a checkpoint waits for the watcher's barrier, a file in its
	// directory.
	sock := newSocketPath(t)
	withWatcher := func(want int) *daemon {
		d := startBuild(t, sessiondBin, env, stateDir, sock, "")
		dir := project(t)
		mustRun(t, "git", "init", "-q", dir)
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		id := d.start(dir, "--", "sleep", "1000")
		d.waitState(id, 10*time.Second, "running")
		d.mustCtl("checkpoint", id)
		waitFor(t, 10*time.Second, fmt.Sprint(want, " watcher's directories"), func() (bool, string) {
			return len(watchDirs()) == want, fmt.Sprint(watchDirs())
		})
		return d
	}
	for range 2 {
		withWatcher(1).kill9()
	}
	d := withWatcher(1)
	d.mustCtl("stop", "--all")
	if code := d.stop(); code != 0 {
		t.Fatalf("sessiond exited %d", code)
	}
	if left := watchDirs(); len(left) != 0 {
		t.Errorf("left in $TMPDIR after a clean stop: %v", left)
	}
	// Another user's file of that name: kept, and the daemon works all the
	// same with a directory of its own.
	d = withWatcher(1)
	named := watchDirs()
	d.mustCtl("stop", "--all")
	d.stop()
	if err := os.WriteFile(named[0], []byte("not the daemon's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(named[0], 65534, 65534); err != nil {
		t.Fatal(err)
	}
	withWatcher(2)
	if data, err := os.ReadFile(named[0]); err != nil || string(data) != "not the daemon's" {
		t.Errorf("the other user's file of the watcher's name was touched: %q %v", data, err)
	}
}
