package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A checkpointer's first call removes the temporary directories an earlier
// checkpointer of the same state dir left (a daemon killed mid-checkpoint
// leaves a copy of the user's index), and nothing else: another state
// dir's, a file of that name, what is not of the family.
func TestTemporaryDirectoriesOfAKilledDaemonAreRemoved(t *testing.T) {
	dir := newRepo(t)
	tmp := os.Getenv("TMPDIR")
	stateDir := t.TempDir()
	ctx := ctxT(t)
	write(t, dir, "a.txt", "a\n")

	// The daemon before, killed in the middle of a checkpoint: what it
	// left, named as it names its directories.
	before := New(Options{StateDir: stateDir})
	left := filepath.Join(tmp, before.temps.own+"index-123")
	must(t, os.MkdirAll(left, 0o700))
	must(t, os.WriteFile(filepath.Join(left, "index"), []byte("a copy of the user's index"), 0o600))
	other := filepath.Join(tmp, newTempNames(t.TempDir()).own+"index-456")
	must(t, os.MkdirAll(other, 0o700))
	plain := filepath.Join(tmp, before.temps.family+"notes")
	must(t, os.WriteFile(plain, []byte("a file"), 0o600))
	unrelated := filepath.Join(tmp, "sessiond-index-789")
	must(t, os.MkdirAll(unrelated, 0o700))

	c := New(Options{StateDir: stateDir})
	if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the killed daemon's temporary directory is still there: %v", err)
	}
	for _, p := range []string{other, plain, unrelated} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s, not the killed daemon's, was removed: %v", p, err)
		}
	}
	// Its own calls leave nothing behind, and their names are its own.
	must(t, os.RemoveAll(other))
	must(t, os.Remove(plain))
	must(t, os.RemoveAll(unrelated))
	write(t, dir, "b.txt", "b\n")
	if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	assertClean(t, dir)
	if !strings.HasPrefix(c.temps.own, c.temps.family) || c.temps.own == before.temps.own {
		t.Errorf("two checkpointers of one state dir share a name: %q, %q", before.temps.own, c.temps.own)
	}
}
