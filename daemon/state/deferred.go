package state

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Deferred syncs. A write whose sync is deferred (WriteRecordDeferred,
// WriteRecordLazily) takes its name at once; until its content is synced,
// the content before it, in the spare, may be the only one on disk. So
// the next write of the file, which goes over that spare, waits for the
// sync first (writeReusing), and so does ReadRecord, which may exchange
// the two.

// lazyDelay is how long a lazy write's sync waits for others to share it
// (a variable for tests).
var lazyDelay = 100 * time.Millisecond

// writeDeferred is writeReusing's deferred or lazy write into the spare
// fd (st its state): the content goes in, the names are exchanged, and the
// content's sync runs on in the background (deferred) or waits for others
// (lazy), the next write of display waiting for it. Where the exchange
// finds no file under name (the spare renamed over nothing), the new name
// is synced at once, as paired does.
func writeDeferred(dirfd, fd int, st *unix.Stat_t, name, spare, display string, data []byte, perm os.FileMode, d durability) error {
	err := fillFile(fd, data, perm, os.FileMode(st.Mode&0o7777), st.Size > int64(len(data)))
	var swapped bool
	if err == nil {
		swapped, err = exchanged(dirfd, spare, name)
	}
	if err != nil {
		unix.Close(fd)
		_ = unix.Unlinkat(dirfd, spare, 0)
		return fmt.Errorf("write %s: %w", display, err)
	}
	if !swapped {
		err := syncFile(fd)
		unix.Close(fd)
		if err == nil {
			err = syncDirFD(dirfd)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", display, err)
		}
		return nil
	}
	if d == lazy && canSyncFS {
		// One sync of the file system serves them all: no descriptor
		// is kept.
		unix.Close(fd)
		pendingSyncs.addLazy(display)
		return nil
	}
	p := pendingSyncs.add(display)
	go func() {
		err := syncFile(fd)
		unix.Close(fd)
		pendingSyncs.finish([]string{display}, p, err)
	}()
	return nil
}

// synchronous is d, or paired for a deferred or lazy write: for the
// writes that cannot defer their sync (no spare to exchange with).
func synchronous(d durability) durability {
	if d == deferred || d == lazy {
		return paired
	}
	return d
}

// pendingSyncs are the deferred writes whose sync is under way or waits,
// by the path they wrote.
var pendingSyncs = syncsUnderWay{by: map[string]*pendingSync{}}

type syncsUnderWay struct {
	mu sync.Mutex
	by map[string]*pendingSync
	// batch gathers the lazy writes that one sync is to serve (nil: none
	// waits); lazyMu guards it, and is taken before mu.
	lazyMu sync.Mutex
	batch  *lazyBatch
}

// pendingSync is the sync of one deferred write, or of a batch of lazy
// ones (which share it).
type pendingSync struct {
	done chan struct{}
	err  error
	// start begins a lazy batch's sync at once (nil: it is under way).
	start func()
}

// lazyBatch is the lazy writes that one sync of their file system serves.
type lazyBatch struct {
	p     pendingSync
	paths []string
	once  sync.Once
	timer *time.Timer
}

func (u *syncsUnderWay) add(path string) *pendingSync {
	p := &pendingSync{done: make(chan struct{})}
	u.mu.Lock()
	u.by[path] = p
	u.mu.Unlock()
	return p
}

// addLazy adds path's write to the batch that waits for its sync,
// beginning one (its sync lazyDelay from now) where none waits.
func (u *syncsUnderWay) addLazy(path string) {
	u.lazyMu.Lock()
	defer u.lazyMu.Unlock()
	b := u.batch
	if b == nil {
		b = &lazyBatch{}
		b.p = pendingSync{done: make(chan struct{}), start: b.sync}
		b.timer = time.AfterFunc(lazyDelay, b.sync)
		u.batch = b
	}
	b.paths = append(b.paths, path)
	u.mu.Lock()
	u.by[path] = &b.p
	u.mu.Unlock()
}

// sync syncs the file system of b's writes, once: whatever was written
// before it began is on disk after it.
func (b *lazyBatch) sync() {
	b.once.Do(func() {
		u := &pendingSyncs
		u.lazyMu.Lock()
		if u.batch == b {
			u.batch = nil // later writes wait for a sync of their own
		}
		u.lazyMu.Unlock()
		b.timer.Stop()
		u.finish(b.paths, &b.p, syncFSOf(b.paths))
	})
}

// syncFSOf syncs the file system the files at paths are on, through the
// directory of the first of them that is still there (none: nothing is
// left to sync).
func syncFSOf(paths []string) error {
	for _, p := range paths {
		dfd, err := openDir(filepath.Dir(p))
		if err != nil {
			continue
		}
		err = syncFSCounted(dfd)
		unix.Close(dfd)
		if err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Dir(p), err)
		}
		return nil
	}
	return nil
}

// finish ends p, the sync of the last writes of paths, with err. A sync
// that failed stays until a wait has told of it, for each path.
func (u *syncsUnderWay) finish(paths []string, p *pendingSync, err error) {
	p.err = err
	if err == nil {
		u.mu.Lock()
		for _, path := range paths {
			if u.by[path] == p {
				delete(u.by, path)
			}
		}
		u.mu.Unlock()
	}
	close(p.done)
}

// wait waits for the sync of path's last write, if it was deferred and is
// not over (beginning it if it waits to be shared), and returns its error,
// once.
func (u *syncsUnderWay) wait(path string) error {
	u.mu.Lock()
	p := u.by[path]
	u.mu.Unlock()
	if p == nil {
		return nil
	}
	if p.start != nil {
		p.start()
	}
	<-p.done
	if p.err != nil {
		u.mu.Lock()
		if u.by[path] != p {
			u.mu.Unlock()
			return nil // told by another wait
		}
		delete(u.by, path)
		u.mu.Unlock()
	}
	return p.err
}

// WaitSynced waits until the last write of path is on disk, where its
// sync was deferred (WriteRecordDeferred, WriteRecordLazily), and returns
// that sync's error.
func WaitSynced(path string) error { return pendingSyncs.wait(path) }

// SyncDeferred syncs, at once, the lazy writes whose sync waits to be
// shared, and waits for it: for a daemon that is about to exit.
func SyncDeferred() error {
	u := &pendingSyncs
	u.lazyMu.Lock()
	b := u.batch
	u.lazyMu.Unlock()
	if b == nil {
		return nil
	}
	b.sync()
	<-b.p.done
	return b.p.err
}

// SyncFS syncs the file system dir is on (syncfs(2); where there is none,
// every file system).
func SyncFS(dir string) error {
	if !canSyncFS {
		unix.Sync()
		return nil
	}
	dfd, err := openDir(dir)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := syncFSCounted(dfd); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
