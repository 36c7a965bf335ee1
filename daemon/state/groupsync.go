package state

import (
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
	fd   int
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
	syncGroups.mu.Lock()
	g := syncGroups.by[uint64(st.Dev)]
	if g == nil {
		g = &syncGroup{}
		syncGroups.by[uint64(st.Dev)] = g
	}
	syncGroups.mu.Unlock()
	return g.sync(fd)
}

func (g *syncGroup) sync(fd int) error {
	w := &syncWaiter{fd: fd, done: make(chan error, 1), lead: make(chan struct{}, 1)}
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
	if len(batch) == 1 {
		err = fsyncCounted(batch[0].fd)
	} else {
		err = syncFSCounted(batch[0].fd)
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
