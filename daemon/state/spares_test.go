package state

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var spareFiles = []string{"session.json", SpareName("session.json"), "environ", "output.log"}

func spareNames(t *testing.T, parent string) []string {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if IsSpareDir(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitSpares waits until s has n spares, ready to be taken: a spare's
// name is there before its files are.
func waitSpares(t *testing.T, s *SpareDirs, n int) []string {
	t.Helper()
	parent := s.parent
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := spareNames(t, parent)
		s.mu.Lock()
		ready := len(s.ready)
		s.mu.Unlock()
		if len(got) == n && ready == n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spares in %s after 10s, want %d", len(got), parent, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustMake(t *testing.T, s *SpareDirs, name string) {
	t.Helper()
	synced, err := s.Make(name)
	if err == nil {
		err = synced()
	}
	if err != nil {
		t.Fatalf("Make %s: %v", name, err)
	}
}

// The rename that takes a spare is synced in the background; whoever
// waits for it hears of a sync that failed.
func TestSpareDirsSyncFailureIsTold(t *testing.T) {
	parent := t.TempDir()
	s := NewSpareDirs(parent, 1, nil, spareFiles...)
	defer s.Close()
	s.Start()
	waitSpares(t, s, 1)
	fsyncFD = func(int) error { return unix.EIO }
	defer func() { fsyncFD = unix.Fsync }()
	synced, err := s.Make("s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := synced(); !errors.Is(err, unix.EIO) {
		t.Errorf("synced() = %v, want EIO", err)
	}
	if err := synced(); !errors.Is(err, unix.EIO) {
		t.Errorf("synced() a second time = %v, want EIO again", err)
	}
}

// A directory made from a spare has the spare's files, empty and private;
// the spares are made again behind it; a write of the record into it
// makes no file (the record and its spare are there already).
func TestSpareDirsMakeFromASpare(t *testing.T) {
	parent := t.TempDir()
	s := NewSpareDirs(parent, 2, func(err error) { t.Error(err) }, spareFiles...)
	defer s.Close()
	s.Start()
	waitSpares(t, s, 2)

	dir := filepath.Join(parent, "s1")
	mustMake(t, s, "s1")
	for _, f := range spareFiles {
		fi, err := os.Lstat(filepath.Join(dir, f))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s in a directory made from a spare: %v, %v", f, fi, err)
		}
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the directory: %v, %v", fi, err)
	}
	var rec map[string]string
	if err := ReadRecord(filepath.Join(dir, "session.json"), &rec); !errors.Is(err, ErrEmpty) {
		t.Errorf("the record before its first write reads %v, want ErrEmpty", err)
	}
	for _, st := range []string{"starting", "running"} {
		if err := WriteRecordDeferred(filepath.Join(dir, "session.json"), map[string]string{"state": st}); err != nil {
			t.Fatal(err)
		}
	}
	if err := WaitSynced(filepath.Join(dir, "session.json")); err != nil {
		t.Fatal(err)
	}
	if err := ReadJSON(filepath.Join(dir, "session.json"), &rec); err != nil || rec["state"] != "running" {
		t.Errorf("the record reads %v, %v", rec, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(spareFiles) {
		t.Errorf("the directory holds %d files after two writes of the record, want the %d it was made with", len(entries), len(spareFiles))
	}
	waitSpares(t, s, 2)

	// A name that is there is never made over, and the spare it did not
	// take stays (the directory of a queued session that starts).
	if err := os.Mkdir(filepath.Join(parent, "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := spareNames(t, parent)
	mustMake(t, s, "taken")
	if entries, _ := os.ReadDir(filepath.Join(parent, "taken")); len(entries) != 0 {
		t.Errorf("a spare was put over a directory that was there: %v", entries)
	}
	time.Sleep(50 * time.Millisecond) // past the refill's quiet time
	if after := waitSpares(t, s, 2); !slices.Equal(after, before) {
		t.Errorf("spares %v after making a directory that was there, want the same %v", after, before)
	}
	mustMake(t, s, "s2")
	if entries, _ := os.ReadDir(filepath.Join(parent, "s2")); len(entries) != len(spareFiles) {
		t.Errorf("the spare put back was not taken next: %d files in s2", len(entries))
	}
}

// Without spares (none made yet, or closed) Make is EnsureDir.
func TestSpareDirsWithoutSpares(t *testing.T) {
	parent := t.TempDir()
	s := NewSpareDirs(parent, 2, nil, spareFiles...)
	s.Close()
	mustMake(t, s, "s1")
	if entries, err := os.ReadDir(filepath.Join(parent, "s1")); err != nil || len(entries) != 0 {
		t.Errorf("made without a spare: %v, %v", entries, err)
	}
	if got := spareNames(t, parent); len(got) != 0 {
		t.Errorf("spares made after Close: %v", got)
	}
}

// A new daemon keeps the spares it would have made, and removes the others
// (a file more, one written into, a mode changed).
func TestSpareDirsAdoptOnlyWhatTheyWouldMake(t *testing.T) {
	parent := t.TempDir()
	first := NewSpareDirs(parent, 5, nil, spareFiles...)
	first.Start()
	made := waitSpares(t, first, 5)
	first.Close()
	slices.Sort(made)
	bad := []func(dir string) error{
		func(dir string) error { return os.WriteFile(filepath.Join(dir, "extra"), nil, 0o600) },
		func(dir string) error { return os.WriteFile(filepath.Join(dir, "environ"), []byte("X=1\x00"), 0o600) },
		func(dir string) error { return os.Chmod(filepath.Join(dir, "output.log"), 0o644) },
		// A file linked from elsewhere: whoever holds the link would see
		// what the session writes.
		func(dir string) error {
			return os.Link(filepath.Join(dir, "environ"), filepath.Join(t.TempDir(), "link"))
		},
	}
	for i, f := range bad {
		if err := f(filepath.Join(parent, made[i])); err != nil {
			t.Fatal(err)
		}
	}
	second := NewSpareDirs(parent, 5, nil, spareFiles...)
	defer second.Close()
	second.Start()
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = spareNames(t, parent)
		if len(got) == 5 && !slices.ContainsFunc(made[:len(bad)], func(m string) bool { return slices.Contains(got, m) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spares after 10s: %v, made before %v", got, made)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !slices.Contains(got, made[len(bad)]) {
		t.Errorf("the spare left as made was not kept: %v, made %v", got, made)
	}
	for i := range bad {
		if slices.Contains(got, made[i]) {
			t.Errorf("spare %d, changed, was kept", i)
		}
	}
}
