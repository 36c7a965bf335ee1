package state

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// Group commit. An atomic replacement is durable after two syncs: the new
// file's data before its rename, and its directory after. When many writes
// wait at once (a thousand sessions ending together), one sync of the
// whole file system serves them all: writers that ask while a sync runs
// are answered by the next one, which begins after they asked. A writer
// alone syncs its own file or directory, as it always did: a file system
// sync also writes whatever else is dirty there (a session's busy log),
// which only pays off when it is shared.

// syncGroup is the group commit of one file system: the writers waiting
// for a sync, and whether one of them (the leader) is syncing for the
// others. Whoever finds none syncing leads; a leader that finds writers
// queued behind its batch hands the lead to the first of them.
type syncGroup struct {
	mu      sync.Mutex
	syncing bool
	queue   []*syncWaiter
}

type syncWaiter struct {
	fds  []int         // the files it waits for, of the group's file system
	done chan error    // the result of the sync that served it
	lead chan struct{} // told to lead the next sync
}

var syncGroups = struct {
	mu sync.Mutex
	by map[uint64]*syncGroup
}{by: map[uint64]*syncGroup{}}

// syncFile makes the data written through fd durable; syncDirGroup, a
// rename or removal in the directory dirfd. Both wait in their file
// system's group.
func syncFile(fd int) error { return groupSync(fd) }

func syncDirGroup(dirfd int) error {
	if err := groupSync(dirfd); err != nil && err != unix.EINVAL && err != unix.ENOTSUP {
		return err
	}
	return nil
}

func groupSync(fd int) error {
	var st unix.Stat_t
	if !canSyncFS || unix.Fstat(fd, &st) != nil {
		return fsyncCounted(fd)
	}
	return groupOf(uint64(st.Dev)).sync([]int{fd})
}

// syncFiles makes the data written through each of fds durable, the
// files of one file system in one wait of its group: the files an end
// writes together cost one sync between them, not one each.
func syncFiles(fds []int) error {
	if len(fds) == 1 {
		return groupSync(fds[0])
	}
	if !canSyncFS {
		var errs []error
		for _, fd := range fds {
			errs = append(errs, fsyncCounted(fd))
		}
		return errors.Join(errs...)
	}
	var devs []uint64
	byDev := map[uint64][]int{}
	for _, fd := range fds {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if _, ok := byDev[uint64(st.Dev)]; !ok {
			devs = append(devs, uint64(st.Dev))
		}
		byDev[uint64(st.Dev)] = append(byDev[uint64(st.Dev)], fd)
	}
	for _, dev := range devs {
		if err := groupOf(dev).sync(byDev[dev]); err != nil {
			return err
		}
	}
	return nil
}

// groupOf is the sync group of the file system dev.
func groupOf(dev uint64) *syncGroup {
	syncGroups.mu.Lock()
	defer syncGroups.mu.Unlock()
	g := syncGroups.by[dev]
	if g == nil {
		g = &syncGroup{}
		syncGroups.by[dev] = g
	}
	return g
}

func (g *syncGroup) sync(fds []int) error {
	w := &syncWaiter{fds: fds, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if g.syncing {
		g.mu.Unlock()
		select {
		case err := <-w.done:
			return err
		case <-w.lead:
		}
	} else {
		g.syncing = true
		g.mu.Unlock()
	}
	// Lead: sync for every writer queued now, this one among them.
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()
	var err error
	switch {
	case len(batch) == 1:
		// Alone: its own files, not all the file system holds.
		var errs []error
		for _, fd := range batch[0].fds {
			errs = append(errs, fsyncCounted(fd))
		}
		err = errors.Join(errs...)
	default:
		err = syncFSCounted(batch[0].fds[0])
	}
	for _, b := range batch {
		b.done <- err
	}
	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].lead <- struct{}{}
	} else {
		g.syncing = false
	}
	g.mu.Unlock()
	return <-w.done
}
