package watch

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
)

// DefaultMaxRecord bounds the paths a watch remembers for Changes when
// Options.MaxRecord is zero.
const DefaultMaxRecord = 20000

// Mark is a point in a watch's record of changes, handed out by
// Watch.Changes. The zero Mark is the start of the watch.
type Mark struct {
	watch uint64 // which watch it belongs to; 0 for the zero Mark
	seq   uint64
}

// Changes is what changed in a watched tree after a mark.
type Changes struct {
	// Paths are the files and directories that were created, written,
	// removed, renamed or had their mode changed after the mark, relative to
	// the root, slash-separated and sorted. A directory stands for
	// everything under it (it appeared, went away, or replaced a file).
	// Ignored paths, .git and .sessiond are never in it.
	Paths []string
	// Complete reports whether Paths holds every change after the mark:
	// no events were lost (inotify queue overflow), no directory is
	// rescanned periodically instead of watched (an inotify limit), none
	// could not be watched or listed, the project root is still there, the
	// record stayed within Options.MaxRecord, and the history since the
	// mark was not given up (see Watch.Changes).
	Complete bool
	// Incomplete says why the record is not complete; "" when it is.
	Incomplete string
	// Mark is the point this read reached: pass it to the next Changes call
	// once what this one returned has been acted on.
	Mark Mark
}

// watchIDs numbers watches across hubs, so that a Mark of one watch is
// never taken for one of another.
var watchIDs atomic.Uint64

// changeRecord is what Changes reads: every path changed, with the sequence
// number of its latest change. It is guarded by Watch.smu.
type changeRecord struct {
	seq   uint64            // the latest sequence number handed out
	paths map[string]uint64 // path -> seq of its latest change
	// floor: the entries at or below it were dropped (a read since a mark
	// gives up everything before that mark), so an older mark is
	// incomplete.
	floor uint64
	// lostAt: changes up to it may be missing from paths (events lost,
	// polled directories, the bound reached), so marks below it are
	// incomplete. lostWhy says what happened.
	lostAt  uint64
	lostWhy string
}

// note records that paths changed; smu is held.
func (w *Watch) note(paths ...string) {
	r := &w.rec
	for _, p := range paths {
		r.seq++
		if _, ok := r.paths[p]; !ok && len(r.paths) >= w.opt.MaxRecord {
			w.lose(fmt.Sprintf("more than %d paths changed since the mark", w.opt.MaxRecord))
			r.seq++
		}
		setIn(&r.paths, p, r.seq)
	}
}

// lose records that changes may have been missed up to now; smu is held.
// The paths remembered so far are of no use to a mark before now, and a
// mark from now on starts afresh, so they are dropped.
func (w *Watch) lose(why string) {
	r := &w.rec
	r.seq++
	r.lostAt, r.lostWhy = r.seq, why
	clear(r.paths)
}

// markLost is lose for callers that do not hold smu.
func (w *Watch) markLost(why string) {
	w.smu.Lock()
	w.lose(why)
	w.smu.Unlock()
}

// Changes returns what changed after since (the zero Mark: since the watch
// started) and a new mark, read at one instant so that no change falls
// between the two.
//
// It first waits, bounded by ctx, until every change made before the call
// has been handled: a marker file is created in the hub's own directory
// and, inotify keeping the order of events, once its event is through so
// are all earlier ones; then the watch handles its queue without waiting
// for the coalescing delay. So a file written just before Changes is in
// Paths.
//
// Reading since a mark gives up what changed at or before it: a later read
// since an older mark is reported incomplete. One consumer per watch keeps
// its last mark until it has acted on what Changes returned, and reads
// again since that mark if it failed to.
func (w *Watch) Changes(ctx context.Context, since Mark) (Changes, error) {
	if err := w.sync(ctx); err != nil {
		return Changes{}, fmt.Errorf("changes in %s: %w", w.root, err)
	}
	w.smu.Lock()
	defer w.smu.Unlock()
	r := &w.rec
	out := Changes{Mark: Mark{watch: w.uid, seq: r.seq}}
	switch {
	case since.watch != 0 && since.watch != w.uid:
		out.Incomplete = "the mark is not of this watch"
	case since.seq > r.seq:
		out.Incomplete = "the mark is not of this watch"
	case w.rootGone:
		out.Incomplete = "the project directory was removed or moved away"
	case w.closed:
		out.Incomplete = "the watch is closed"
	case w.nPolled > 0:
		out.Incomplete = fmt.Sprintf("%d directories are rescanned periodically instead of watched (inotify limit)", w.nPolled)
	case w.nSkipped > 0:
		out.Incomplete = fmt.Sprintf("%d directories could not be watched or listed", w.nSkipped)
	case since.seq < r.lostAt:
		out.Incomplete = r.lostWhy
	case since.seq < r.floor:
		out.Incomplete = "changes before the mark were given up by a read since a later mark"
	}
	out.Complete = out.Incomplete == ""
	valid := (since.watch == 0 || since.watch == w.uid) && since.seq <= r.seq
	for p, s := range r.paths {
		if s > since.seq {
			out.Paths = append(out.Paths, p)
		} else if valid {
			delete(r.paths, p)
		}
	}
	if valid && since.seq > r.floor {
		r.floor = since.seq
	}
	sort.Strings(out.Paths)
	return out, nil
}

// sync waits until the changes made before it are in the record.
func (w *Watch) sync(ctx context.Context) error {
	if err := w.hub.barrier(ctx); err != nil {
		return err
	}
	done := make(chan struct{})
	select {
	case w.flush <- done:
	case <-w.done:
		return nil // stopped: nothing more will be recorded
	case <-ctx.Done():
		return fmt.Errorf("wait for the watch to handle its events: %w", ctx.Err())
	}
	w.ensure()
	select {
	case <-done:
		return nil
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the watch to handle its events: %w", ctx.Err())
	}
}
