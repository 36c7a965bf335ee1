package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// holdSyncs makes every sync wait until release is closed, counting them;
// the returned func closes it (once).
func holdSyncs(t *testing.T) (synced func() int64, release func()) {
	t.Helper()
	n := countSyncs(t)
	gate := make(chan struct{})
	fsyncFD = func(fd int) error { <-gate; n.Add(1); return unix.Fsync(fd) }
	syncFS = func(fd int) error { <-gate; n.Add(1); return unix.Syncfs(fd) }
	closed := false
	release = func() {
		if !closed {
			closed = true
			close(gate)
		}
	}
	t.Cleanup(release)
	return n.Load, release
}

// seqIn reads the seq of the record in the file p.
func seqIn(t *testing.T, p string) uint64 {
	t.Helper()
	return recordIn(t, p).Seq
}

// withSpare writes the record at path twice: the file and its spare.
func withSpare(t *testing.T, path string) {
	t.Helper()
	for seq := uint64(1); seq <= 2; seq++ {
		if err := WriteRecord(path, recordSeq{ID: "s", Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
}

// failOnce replaces *hook (fsyncFD or syncFS) with one that fails with
// EIO once armed, then calls real; it returns the arming.
func failOnce(t *testing.T, hook *func(int) error, real func(int) error) (arm func()) {
	t.Helper()
	var fail atomic.Bool
	*hook = func(fd int) error {
		if fail.CompareAndSwap(true, false) {
			return unix.EIO
		}
		return real(fd)
	}
	t.Cleanup(func() { *hook = real })
	return func() { fail.Store(true) }
}

// TestDeferredWriteSyncsAfterAndTheNextWaits: a deferred write of a record
// returns before its sync, under its name at once, the content before it
// in the spare; the next write of the record, which goes over that spare,
// waits until the deferred sync is over, so that the spare is never
// written while it holds the only content on disk; WaitSynced waits for it
// too.
func TestDeferredWriteSyncsAfterAndTheNextWaits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.json")
	spare := filepath.Join(dir, SpareName("session.json"))
	withSpare(t, path) // the file and its spare
	synced, release := holdSyncs(t)

	done := make(chan error, 1)
	go func() { done <- WriteRecordDeferred(path, recordSeq{ID: "s", Seq: 3}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the deferred write waited for its sync")
	}
	if got, prev := seqIn(t, path), seqIn(t, spare); got != 3 || prev != 2 {
		t.Fatalf("after the deferred write the record holds seq %d, its spare %d; want 3 and 2", got, prev)
	}
	if n := synced(); n != 0 {
		t.Fatalf("%d syncs over while they are held", n)
	}

	next := make(chan error, 1)
	go func() { next <- WriteRecord(path, recordSeq{ID: "s", Seq: 4}) }()
	waited := make(chan error, 1)
	go func() { waited <- WaitSynced(path) }()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-next:
		t.Fatalf("the next write returned (%v) before the deferred sync was over", err)
	case err := <-waited:
		t.Fatalf("WaitSynced returned (%v) before the deferred sync was over", err)
	default:
	}
	if prev := seqIn(t, spare); prev != 2 {
		t.Fatalf("the spare holds seq %d while the deferred sync runs, want 2 untouched", prev)
	}

	release()
	for what, ch := range map[string]chan error{"WaitSynced": waited, "the next write": next} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s never returned", what)
		}
	}
	if got, prev := seqIn(t, path), seqIn(t, spare); got != 4 || prev != 3 {
		t.Errorf("after the next write the record holds seq %d, its spare %d; want 4 and 3", got, prev)
	}
	if n := synced(); n != 2 {
		t.Errorf("%d syncs, want 2 (the deferred write's, the next write's)", n)
	}
	var r recordSeq
	if err := ReadRecord(path, &r); err != nil || r.Seq != 4 {
		t.Errorf("ReadRecord = seq %d, %v; want 4", r.Seq, err)
	}
}

// TestDeferredWriteFailedSyncIsTheNextWritesError: a deferred sync that
// fails is told to whoever waits for it, and the next write, which still
// lands, says so.
func TestDeferredWriteFailedSyncIsTheNextWritesError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.json")
	withSpare(t, path)
	// The next sync fails, once.
	failNext := failOnce(t, &fsyncFD, unix.Fsync)
	failNext()
	if err := WriteRecordDeferred(path, recordSeq{ID: "s", Seq: 3}); err != nil {
		t.Fatalf("the deferred write: %v (its sync's error is for later)", err)
	}
	if err := WaitSynced(path); !errors.Is(err, unix.EIO) {
		t.Fatalf("WaitSynced = %v, want EIO", err)
	}
	if err := WaitSynced(path); err != nil {
		t.Fatalf("WaitSynced a second time = %v, want nil: the failure is told once", err)
	}

	failNext()
	if err := WriteRecordDeferred(path, recordSeq{ID: "s", Seq: 4}); err != nil {
		t.Fatal(err)
	}
	err := WriteRecord(path, recordSeq{ID: "s", Seq: 5})
	if !errors.Is(err, unix.EIO) || !strings.Contains(err.Error(), "the write before it was not synced") {
		t.Fatalf("the write after a failed deferred sync = %v, want it to say so", err)
	}
	if got := seqIn(t, path); got != 5 {
		t.Errorf("the record holds seq %d, want 5: the write lands all the same", got)
	}
}

// TestDeferredWriteWithoutASpareSyncsAtOnce: where there is no file to
// exchange with (the record's first write), a deferred write syncs its
// content and its name before it returns, as WriteRecord does.
func TestDeferredWriteWithoutASpareSyncsAtOnce(t *testing.T) {
	dir := t.TempDir()
	// A spare with nothing under the record's name: renamed over nothing.
	if err := os.WriteFile(filepath.Join(dir, SpareName("other.json")), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n := countSyncs(t)
	for _, tc := range []struct{ name, what string }{
		{"session.json", "the first write"},
		{"other.json", "a write of a spare onto no file"},
	} {
		path := filepath.Join(dir, tc.name)
		n.Store(0)
		if err := WriteRecordDeferred(path, recordSeq{ID: "s", Seq: 1}); err != nil {
			t.Fatal(err)
		}
		if got := n.Load(); got != 2 {
			t.Errorf("%s made %d syncs before it returned, want 2 (its content, its name)", tc.what, got)
		}
		if got := seqIn(t, path); got != 1 {
			t.Errorf("after %s the record holds seq %d, want 1", tc.what, got)
		}
	}
}

// TestLazyWritesShareOneSync: lazy writes of records made within
// lazyDelay of each other are synced together, with one sync of their
// file system, after they return; whoever waits for one of them (its next
// write, WaitSynced, SyncDeferred) makes that sync at once, for all.
func TestLazyWritesShareOneSync(t *testing.T) {
	dir := t.TempDir()
	paths := make([]string, 5)
	for i := range paths {
		d := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		paths[i] = filepath.Join(d, "session.json")
		withSpare(t, paths[i])
	}
	n := countSyncs(t)
	// No timer comes to the rescue: whoever waits makes the sync.
	lazyDelay = time.Hour
	t.Cleanup(func() { lazyDelay = 100 * time.Millisecond })
	within := func(what string, fn func() error) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- fn() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s waited for the lazy writes' timer", what)
		}
	}

	// Shared.
	for _, p := range paths {
		if err := WriteRecordLazily(p, recordSeq{ID: "s", Seq: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if got := n.Load(); got != 0 {
		t.Fatalf("%d syncs as the lazy writes returned, want 0", got)
	}
	for _, p := range paths {
		within("WaitSynced", func() error { return WaitSynced(p) })
		if got := seqIn(t, p); got != 3 {
			t.Errorf("%s holds seq %d, want 3", p, got)
		}
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d syncs for %d lazy writes, want 1", got, len(paths))
	}

	// A second write of one of them: the shared sync at once, then its own.
	n.Store(0)
	for _, p := range paths {
		if err := WriteRecordLazily(p, recordSeq{ID: "s", Seq: 4}); err != nil {
			t.Fatal(err)
		}
	}
	within("the write after a lazy one", func() error { return WriteRecord(paths[0], recordSeq{ID: "s", Seq: 5}) })
	if got := n.Load(); got != 2 {
		t.Errorf("%d syncs, want 2 (the lazy writes' one, the write's own)", got)
	}
	for _, p := range paths[1:] {
		within("WaitSynced", func() error { return WaitSynced(p) })
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d syncs after the others were waited for, want still 2: the one served them all", got)
	}

	// SyncDeferred, at once; and nothing left after it.
	n.Store(0)
	if err := WriteRecordLazily(paths[1], recordSeq{ID: "s", Seq: 6}); err != nil {
		t.Fatal(err)
	}
	if err := SyncDeferred(); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("SyncDeferred made %d syncs, want 1", got)
	}
	if err := SyncDeferred(); err != nil || n.Load() != 1 {
		t.Errorf("SyncDeferred with nothing waiting: %v, %d syncs", err, n.Load())
	}
}

// TestLazySyncWithoutAWaiterRunsAfterTheDelay: nobody waits, and the
// lazy writes are on disk lazyDelay later all the same.
func TestLazySyncWithoutAWaiterRunsAfterTheDelay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.json")
	withSpare(t, path)
	n := countSyncs(t)
	if err := WriteRecordLazily(path, recordSeq{ID: "s", Seq: 3}); err != nil {
		t.Fatal(err)
	}
	// The sync is counted as it is made; the write stops waiting for it
	// once it is over.
	left := func() int {
		pendingSyncs.mu.Lock()
		defer pendingSyncs.mu.Unlock()
		return len(pendingSyncs.by)
	}
	deadline := time.Now().Add(10 * time.Second)
	for (n.Load() == 0 || left() != 0) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d syncs after the delay, want 1", got)
	}
	if l := left(); l != 0 {
		t.Errorf("%d writes still wait for their sync 10 s after it", l)
	}
}

// TestLazySyncFailureIsToldToEach: a shared sync that fails is the error
// of the next write of each record it was to serve, once.
func TestLazySyncFailureIsToldToEach(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 2 {
		d := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "session.json")
		withSpare(t, p)
		paths = append(paths, p)
	}
	failOnce(t, &syncFS, unix.Syncfs)()
	for _, p := range paths {
		if err := WriteRecordLazily(p, recordSeq{ID: "s", Seq: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := SyncDeferred(); !errors.Is(err, unix.EIO) {
		t.Fatalf("SyncDeferred = %v, want EIO", err)
	}
	for _, p := range paths {
		if err := WriteRecord(p, recordSeq{ID: "s", Seq: 4}); !errors.Is(err, unix.EIO) {
			t.Errorf("%s: the next write = %v, want the failed sync's EIO", p, err)
		}
		if err := WriteRecord(p, recordSeq{ID: "s", Seq: 5}); err != nil {
			t.Errorf("%s: the write after = %v, want nil: told once", p, err)
		}
	}
}
