package watch

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessiond/sessiond/daemon/identity"
	"github.com/sessiond/sessiond/daemon/lazylog"
	"github.com/sessiond/sessiond/daemon/state"
	"go.uber.org/zap"
)

// Defaults for Options.
const (
	DefaultMaxFiles = 1000
	DefaultCoalesce = 50 * time.Millisecond
	DefaultRescan   = 30 * time.Second
)

const (
	// maxQueued bounds the distinct paths waiting for one watch; past it the
	// events are dropped and the watch rescans, as after a kernel overflow.
	maxQueued = 1 << 16
	// maxMoreTracked bounds the paths remembered (as hashes) beyond MaxFiles
	// to count FilesChangedMore without double counting; past it the count
	// may count a path twice.
	maxMoreTracked = 1 << 16
)

// Options tune a Watch. The zero value is usable.
type Options struct {
	// Ignore holds extra patterns in gitignore syntax, relative to the
	// project root (the spec's [watch] ignore).
	Ignore []string
	// LeaveOut names directories (by name, at any depth) treated as
	// ignored even when no ignore rule says so: dependency trees, virtual
	// environments and caches such as node_modules or .venv. They are never
	// watched and nothing in them is reported. Pass the list that
	// checkpoints leave out (checkpoint.DefaultLeaveOut, or the configured
	// one), so that the watcher and the checkpoints agree on what counts
	// as the project's work. Default none.
	LeaveOut []string
	// MaxRecord bounds the paths remembered for Changes; past it the record
	// since the marks before is incomplete. Default DefaultMaxRecord.
	MaxRecord int
	// MaxFiles bounds the set of changed files kept; default 1000.
	MaxFiles int
	// Coalesce is how long events are gathered before they are handled; a
	// burst on one path within it counts once. Default 50ms.
	Coalesce time.Duration
	// Rescan is the period of the rescans of directories that could not be
	// watched (an inotify limit was hit); default 30s.
	Rescan time.Duration
	// OnActivity, if set, is called once per handled batch of changes with
	// the file that changed last. It is called from the watch's goroutine,
	// never concurrently for one Watch, and must not block long.
	OnActivity func(Activity)
	// User is whom the project belongs to, nil for the daemon's own user:
	// the watch lists its directories and runs its git with that user's
	// rights, so that it never sees what the user could not.
	User *identity.User
	// Prepared, if set, is git's view of the project's ignore rules begun
	// ahead (Hub.Prepare with the same root, Ignore and User): the watch
	// takes it over rather than start its own git.
	Prepared *Prepared
}

func (o Options) withDefaults() Options {
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.Coalesce <= 0 {
		o.Coalesce = DefaultCoalesce
	}
	if o.Rescan <= 0 {
		o.Rescan = DefaultRescan
	}
	if o.MaxRecord <= 0 {
		o.MaxRecord = DefaultMaxRecord
	}
	return o
}

// Activity is a change seen in a project.
type Activity struct {
	// Path is the file, relative to the project root and slash-separated.
	Path string
	// Time is when the change was seen.
	Time time.Time
}

// Stats is what a watch has seen so far.
type Stats struct {
	// FilesChanged holds the files (not directories) created, written,
	// removed or renamed, relative to the root, sorted, at most MaxFiles.
	FilesChanged []string
	// FilesChangedMore counts the changed files beyond MaxFiles.
	FilesChangedMore int
	// LastFileEdited is the file created or written last.
	LastFileEdited string
	// LastActivity is when the last change was seen; zero if none was.
	LastActivity time.Time
	// Dirs is the number of directories watched through inotify.
	Dirs int
	// Polled is the number of directories rescanned periodically instead.
	Polled int
	// Degraded reports whether some directories are rescanned periodically
	// instead of watched.
	Degraded bool
	// RootGone reports that the project directory was removed or moved away
	// and the watch has stopped.
	RootGone bool
}

// Watch is the watch of one project tree.
type Watch struct {
	hub      *Hub
	id       int
	uid      uint64 // unique across hubs, for Marks
	root     string // absolute, symlinks resolved
	opt      Options
	leaveOut map[string]bool // shared by the watches of one list: read only
	ign      *ignorer
	rootDev  uint64
	rootIno  uint64
	started  time.Time

	// Owned by the watch's goroutine (by Hub.Watch before it starts, by Close
	// after it ends). Keys are paths relative to root, "" for root. The
	// maps but dirs are made when first written to (setIn): an idle watch
	// of a small project holds none.
	dirs           map[string]dirID               // watched through inotify: which directory
	polled         map[string]map[string]struct{} // rescanned: names seen last time
	skipped        map[string]struct{}            // could not be watched or listed
	lastPoll       time.Time
	degradedLogged bool

	qmu    sync.Mutex
	queue  map[string]queued
	rescan bool
	wake   chan struct{}

	flush     chan chan struct{} // Changes asks the loop to handle its queue now
	quit      chan struct{}
	done      chan struct{} // closed once the watch has ended (Close, root gone)
	closeOnce sync.Once
	doneOnce  sync.Once

	// The loop is a goroutine only while there is work (see ensure):
	// running while it lives (set under runMu), ended once the watch has.
	runMu   sync.Mutex
	running atomic.Bool
	ended   bool

	smu     sync.Mutex
	changed map[string]struct{}
	// changedList is changed sorted, as Stats last made it: shared by the
	// Stats that follow until changed grows (never modified in place).
	changedList  []string
	more         map[uint64]struct{}
	moreCount    int
	lastEdited   string
	lastEditedAt time.Time
	lastActivity time.Time
	nDirs        int
	nPolled      int
	nSkipped     int
	rootGone     bool
	closed       bool
	rec          changeRecord
}

// logger is the hub's logger with the watch's project on every entry,
// made for each use: a watch rarely logs, and holds no logger of its own.
func (w *Watch) logger() *zap.Logger {
	return lazylog.With(w.hub.log, zap.String("project", w.root))
}

// setIn sets m[k] = v, making the map first if need be.
func setIn[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}

type queued struct {
	op fsnotify.Op
	t  time.Time
}

// change is a file found changed.
type change struct {
	rel    string
	t      time.Time
	exists bool
	// attrOnly: only its attributes changed (a chmod, a touch): it goes into
	// the record for checkpoints, but it is not an edit.
	attrOnly bool
}

// Watch starts watching root, an absolute directory, and returns once every
// directory of it that is not ignored is watched.
func (h *Hub) Watch(root string, opt Options) (*Watch, error) {
	defer opt.Prepared.Close() // one not taken below
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("watch %q: not an absolute path", root)
	}
	files := state.FilesOf(opt.User)
	real, err := files.Resolve(root)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	fi, err := files.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("watch %s: not a directory", root)
	}
	// Git's view of the ignore rules, when it was begun ahead: its git
	// stops when the watch does.
	ign, quit := opt.Prepared.take(real, opt.Ignore, opt.User)
	if ign == nil {
		quit = make(chan struct{})
	}
	opt.Prepared = nil
	w := &Watch{
		hub:      h,
		uid:      watchIDs.Add(1),
		root:     real,
		opt:      opt.withDefaults(),
		leaveOut: h.leaveOutSet(opt.LeaveOut),
		dirs:     make(map[string]dirID),
		wake:     make(chan struct{}, 1),
		flush:    make(chan chan struct{}, 8),
		quit:     quit,
		done:     make(chan struct{}),
		ign:      ign,
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		w.rootDev, w.rootIno = uint64(st.Dev), st.Ino
	}
	// The scan owns the watch's state until the loop may run: events that
	// come meanwhile wait in the queue.
	w.running.Store(true)
	if err := h.register(w); err != nil {
		if w.ign != nil {
			close(w.quit)
			w.ign.close()
		}
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	if w.ign == nil {
		w.ign = newIgnorer(h, w.logger, real, w.opt.Ignore, fmt.Sprintf("w%d", w.id), opt.User, w.quit)
	}
	w.started = time.Now()
	w.lastPoll = w.started
	if err := w.scan("", scanQuiet, time.Time{}, false); err != nil {
		w.teardown()
		w.end() // after teardown: Close may be waiting to do its own
		h.forget(w)
		if w.quitting() {
			err = ErrClosed
		}
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	w.runMu.Lock()
	if w.ign.busy() || len(w.wake) > 0 || len(w.flush) > 0 {
		go w.loop() // for what came during the scan, or to end its git coprocesses once idle
	} else {
		w.running.Store(false)
	}
	w.runMu.Unlock()
	return w, nil
}

// Close stops the watch. Its Stats and the Changes recorded until then stay
// readable; Changes reports the record incomplete from then on.
func (w *Watch) Close() error {
	w.closeOnce.Do(func() {
		close(w.quit)
		w.runMu.Lock()
		w.ended = true
		running := w.running.Load()
		w.runMu.Unlock()
		if running {
			<-w.done // the loop ends it
		} else {
			w.end()
		}
		w.teardown()
		w.hub.forget(w)
		w.smu.Lock()
		w.closed = true
		w.smu.Unlock()
	})
	return nil
}

// Stats returns what the watch has seen so far.
func (w *Watch) Stats() Stats {
	w.smu.Lock()
	defer w.smu.Unlock()
	if w.changedList == nil || len(w.changedList) != len(w.changed) {
		// The set only grows: a list as long as the set is the set.
		files := make([]string, 0, len(w.changed))
		for f := range w.changed {
			files = append(files, f)
		}
		sort.Strings(files)
		w.changedList = files
	}
	files := w.changedList
	return Stats{
		FilesChanged:     files,
		FilesChangedMore: w.moreCount,
		LastFileEdited:   w.lastEdited,
		LastActivity:     w.lastActivity,
		Dirs:             w.nDirs,
		Polled:           w.nPolled,
		Degraded:         w.nPolled > 0,
		RootGone:         w.rootGone,
	}
}

// LastActivity is when the last change was seen; zero if none was. It is
// Stats().LastActivity without the list of files.
func (w *Watch) LastActivity() time.Time {
	w.smu.Lock()
	defer w.smu.Unlock()
	return w.lastActivity
}

// ChangedSince reports whether a change was seen after t: whether a
// checkpoint taken at t is out of date.
func (w *Watch) ChangedSince(t time.Time) bool {
	w.smu.Lock()
	defer w.smu.Unlock()
	return w.lastActivity.After(t)
}

// Root returns the watched directory, symlinks resolved.
func (w *Watch) Root() string { return w.root }

func (w *Watch) relOf(abs string) string {
	if abs == w.root {
		return ""
	}
	return filepath.ToSlash(strings.TrimPrefix(abs, w.root+string(filepath.Separator)))
}

func (w *Watch) abs(rel string) string {
	if rel == "" {
		return w.root
	}
	return filepath.Join(w.root, filepath.FromSlash(rel))
}

func (w *Watch) quitting() bool {
	select {
	case <-w.quit:
		return true
	default:
		return false
	}
}

// enqueue is called by the hub's reader: it must not block.
func (w *Watch) enqueue(rel string, op fsnotify.Op, t time.Time) {
	w.qmu.Lock()
	if q, ok := w.queue[rel]; ok {
		w.queue[rel] = queued{op: q.op | op, t: t}
	} else if len(w.queue) < maxQueued {
		setIn(&w.queue, rel, queued{op: op, t: t})
	} else {
		w.rescan = true
	}
	w.qmu.Unlock()
	w.poke()
}

// requestRescan asks for a rescan of the whole tree (events were lost).
func (w *Watch) requestRescan() {
	w.qmu.Lock()
	w.rescan = true
	w.qmu.Unlock()
	w.poke()
}

func (w *Watch) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
	w.ensure()
}

// ensure starts the loop unless it runs. Its callers leave their work
// (a wake token, a flush request) in a channel first: a loop on its way
// out looks there after it stops running, so no work is left behind.
func (w *Watch) ensure() {
	if w.running.Load() {
		return
	}
	w.runMu.Lock()
	defer w.runMu.Unlock()
	if !w.ended && !w.running.Load() {
		w.running.Store(true)
		go w.loop()
	}
}

// leave is the loop going idle: true when it may return, false when work
// came as it left.
func (w *Watch) leave() bool {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	w.running.Store(false)
	if w.ended {
		w.end() // Close saw the loop running and waits for it
		return true
	}
	if len(w.wake) > 0 || len(w.flush) > 0 {
		w.running.Store(true)
		return false
	}
	return true
}

// end marks the watch ended: done is closed.
func (w *Watch) end() {
	w.doneOnce.Do(func() { close(w.done) })
}

// stopRunning ends the loop for good (quit, root gone).
func (w *Watch) stopRunning() {
	w.runMu.Lock()
	w.ended = true
	w.running.Store(false)
	w.runMu.Unlock()
	w.end()
}

// watchLinger is how long an idle loop that holds no git coprocess waits
// for more events before its goroutine leaves.
const watchLinger = time.Second

// loop is the watch's goroutine while there is work: it coalesces events,
// handles them, runs the degraded-mode rescans and stops idle git
// coprocesses. Once idle (nothing queued, no directory polled, no
// coprocess left) it leaves; the next event or Changes starts it again.
func (w *Watch) loop() {
	coalesce := time.NewTimer(time.Hour)
	coalesce.Stop()
	defer coalesce.Stop()
	idleAfter := func() time.Duration {
		if w.ign.busy() {
			return w.hub.gitIdle
		}
		return min(watchLinger, w.hub.gitIdle)
	}
	idle := time.NewTimer(idleAfter())
	defer idle.Stop()
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	pending, worked := false, false
	for {
		var tick <-chan time.Time
		switch {
		case len(w.polled) > 0 && ticker == nil:
			ticker = time.NewTicker(w.opt.Rescan)
		case len(w.polled) == 0 && ticker != nil:
			ticker.Stop()
			ticker = nil
		}
		if ticker != nil {
			tick = ticker.C
		}
		quiet := false
		select {
		case <-w.quit:
			w.stopRunning()
			return
		case <-w.wake:
			if !pending {
				pending = true
				coalesce.Reset(w.opt.Coalesce)
			}
			continue
		case <-coalesce.C:
			pending = false
			w.handleQueue()
			worked = true
		case done := <-w.flush:
			if pending {
				pending = false
				coalesce.Stop()
			}
			w.handleQueue()
			close(done)
			worked = true
		case <-tick:
			w.poll()
			worked = true
		case <-idle.C:
			w.ign.stop()
			worked, quiet = false, true
		}
		// A removed root sends no event while any process (the agent, our
		// git) has it as its working directory, so look after every batch and
		// once more when things go quiet.
		if !w.isRootGone() && !w.rootAlive() {
			w.markRootGone()
		}
		if w.isRootGone() {
			w.stopRunning()
			return
		}
		if quiet && !pending && ticker == nil && w.leave() {
			return
		}
		if worked {
			idle.Reset(idleAfter()) // fires once after the last work, not periodically
		}
	}
}

func (w *Watch) isRootGone() bool {
	w.smu.Lock()
	defer w.smu.Unlock()
	return w.rootGone
}

// handleQueue takes the events gathered so far and handles them.
func (w *Watch) handleQueue() {
	w.qmu.Lock()
	batch, rescan := w.queue, w.rescan
	w.queue, w.rescan = nil, false
	w.qmu.Unlock()

	if w.ign.excludesChanged() {
		// git reads info/exclude once per process, and what it ignored was
		// never watched: start afresh, as after a root .gitignore change.
		w.logger().Info("info/exclude changed; re-reading the tree")
		w.ign.stop()
		_ = w.scan("", scanQuiet, time.Time{}, true)
		w.markLost("ignore rules changed (info/exclude)")
	}
	if rescan {
		w.logger().Warn("events were lost (inotify queue overflow); rescanning the project")
		w.fullRescan()
		w.markLost("events were lost (inotify queue overflow); the tree was rescanned")
	}
	w.handleBatch(batch)
	w.syncCounts()
}

// fullRescan walks the whole tree after events were lost: it watches the
// directories that appeared, forgets those that went, and counts as changed
// every file modified since the watch started (which are exactly the files
// the set should hold; deletions in the lost window cannot be seen).
func (w *Watch) fullRescan() {
	if !w.rootAlive() {
		w.markRootGone()
		return
	}
	_ = w.scan("", scanSince, w.started.Add(-fsTimeSlack), true)
}

// handleBatch handles one coalesced batch of events.
func (w *Watch) handleBatch(batch map[string]queued) {
	if len(batch) == 0 {
		return
	}
	if _, ok := batch[""]; ok {
		delete(batch, "")
		if !w.rootAlive() {
			w.markRootGone()
			return
		}
	}
	var (
		cands      []string // files and new directories to ask git about
		candChange []change
		candDir    []bool
		removed    = make(map[string]struct{})
		gitignores []string
	)
	var went []string // removed or moved away: whatever is there now
	for rel, q := range batch {
		if alwaysIgnored(rel) {
			continue
		}
		if path.Base(rel) == ".gitignore" {
			gitignores = append(gitignores, parentOf(rel))
		}
		if q.op&(fsnotify.Remove|fsnotify.Rename) != 0 {
			// What was there went, even if what is there now is ignored
			// (a file replaced by an ignored directory): the record for
			// checkpoints has it.
			went = append(went, rel)
		}
		_, isWatched := w.dirs[rel]
		_, isPolled := w.polled[rel]
		attrOnly := q.op == fsnotify.Chmod
		fi, err := os.Lstat(w.abs(rel))
		switch {
		case err != nil:
			if isWatched || isPolled {
				removed[rel] = struct{}{}
				continue
			}
			if !errors.Is(err, os.ErrNotExist) {
				w.logger().Debug("cannot stat changed path", zap.String("path", rel), zap.Error(err))
			}
			if w.inLeaveOut(rel, true) {
				// Most likely the left-out directory itself went: not an
				// edit, but what a checkpoint leaves out changed.
				w.smu.Lock()
				w.note(rel)
				w.smu.Unlock()
				continue
			}
			cands = append(cands, rel)
			candChange = append(candChange, change{rel: rel, t: q.t})
			candDir = append(candDir, false)
		case fi.IsDir():
			if (isWatched || isPolled) && q.op&(fsnotify.Remove|fsnotify.Rename) != 0 {
				// Moved or removed, and a directory of that name is back
				// (made again, or another moved in) before this batch: the
				// watches are on the one that went. Forget them, and take
				// this one as new.
				removed[rel] = struct{}{}
			} else if isWatched || isPolled {
				continue // a watched directory's own mode is of no interest
			}
			if w.inLeaveOut(rel, true) {
				w.smu.Lock()
				w.note(rel) // not watched, not an edit; see above
				w.smu.Unlock()
				continue
			}
			cands = append(cands, rel)
			candChange = append(candChange, change{rel: rel, t: q.t})
			candDir = append(candDir, true)
		default: // a file, symlink (never followed) or special file
			if isWatched || isPolled {
				removed[rel] = struct{}{} // a directory replaced by a file
				attrOnly = false
			}
			if w.inLeaveOut(rel, false) {
				continue
			}
			cands = append(cands, rel)
			candChange = append(candChange, change{rel: rel, t: q.t, exists: true, attrOnly: attrOnly})
			candDir = append(candDir, false)
		}
	}
	if len(removed) > 0 {
		w.unwatchTrees(removed)
	}
	if len(removed) > 0 || len(went) > 0 {
		w.smu.Lock()
		for d := range removed {
			w.note(d)
		}
		w.note(went...)
		w.smu.Unlock()
	}
	if len(gitignores) > 0 {
		w.ign.stop() // git caches ignore files; the next question starts a fresh one
	}
	ignored := w.ign.ignored(cands)
	var files []change
	var newDirs []string
	for i := range cands {
		switch {
		case ignored[i]:
		case candDir[i]:
			newDirs = append(newDirs, cands[i])
		default:
			files = append(files, candChange[i])
		}
	}
	w.record(files)
	if len(newDirs) > 0 {
		w.smu.Lock()
		w.note(newDirs...)
		w.smu.Unlock()
	}
	// Parents first: a nested directory is then found by its parent's scan.
	sort.Strings(newDirs)
	for _, d := range newDirs {
		if _, ok := w.dirs[d]; ok {
			continue
		}
		if _, ok := w.polled[d]; ok {
			continue
		}
		// Files made before the watch landed are found by this scan.
		_ = w.scan(d, scanCreated, time.Time{}, false)
	}
	if len(gitignores) > 0 {
		w.logger().Info("ignore rules changed; re-reading the tree", zap.Strings("gitignore_dirs", gitignores))
		for _, d := range outermost(gitignores) {
			if _, ok := w.dirs[d]; ok || d == "" {
				_ = w.scan(d, scanQuiet, time.Time{}, true)
			}
		}
	}
}

// record adds changed files to the record of changes and, unless only
// their attributes changed, to the stats, and tells OnActivity.
func (w *Watch) record(files []change) {
	if len(files) == 0 {
		return
	}
	now := time.Now()
	var last change
	w.smu.Lock()
	for _, c := range files {
		w.note(c.rel)
		if c.attrOnly {
			continue
		}
		if c.t.After(now) {
			c.t = now
		}
		w.addChanged(c.rel)
		if c.exists && !c.t.Before(w.lastEditedAt) {
			w.lastEdited, w.lastEditedAt = c.rel, c.t
		}
		if c.t.After(w.lastActivity) {
			w.lastActivity = c.t
		}
		if last.rel == "" || c.t.After(last.t) || (c.t.Equal(last.t) && c.exists && !last.exists) {
			last = c
		}
	}
	w.smu.Unlock()
	if w.opt.OnActivity != nil && last.rel != "" {
		w.opt.OnActivity(Activity{Path: last.rel, Time: last.t})
	}
}

// addChanged adds one path to the bounded set; smu is held.
func (w *Watch) addChanged(rel string) {
	if _, ok := w.changed[rel]; ok {
		return
	}
	if len(w.changed) < w.opt.MaxFiles {
		setIn(&w.changed, rel, struct{}{})
		return
	}
	if len(w.more) >= maxMoreTracked {
		w.moreCount++
		return
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(rel))
	sum := h.Sum64()
	if _, ok := w.more[sum]; !ok {
		setIn(&w.more, sum, struct{}{})
		w.moreCount++
	}
}

// rootAlive reports whether the root is still the directory that was
// watched (not removed, not moved away, not replaced).
func (w *Watch) rootAlive() bool {
	fi, err := os.Lstat(w.root)
	if err != nil || !fi.IsDir() {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && w.rootIno != 0 {
		return uint64(st.Dev) == w.rootDev && st.Ino == w.rootIno
	}
	return true
}

// markRootGone stops the watch of a project whose directory went away; the
// stats stay.
func (w *Watch) markRootGone() {
	w.logger().Warn("project directory removed or moved away; its watch has stopped")
	w.teardown()
	w.smu.Lock()
	w.rootGone = true
	w.smu.Unlock()
}

// teardown drops every watch and ends the git coprocesses.
func (w *Watch) teardown() {
	for d := range w.dirs {
		w.hub.unwatchDir(w.abs(d), w)
	}
	clear(w.dirs)
	clear(w.polled)
	clear(w.skipped)
	if w.ign != nil {
		w.ign.close()
	}
	w.syncCounts()
}

func (w *Watch) syncCounts() {
	w.smu.Lock()
	w.nDirs, w.nPolled, w.nSkipped = len(w.dirs), len(w.polled), len(w.skipped)
	w.smu.Unlock()
}

// inLeaveOut reports whether rel lies in a directory named in
// Options.LeaveOut, or is one (when isDir), and is not tracked there nor
// holds what is (a checkpoint holds a tracked file wherever it is).
func (w *Watch) inLeaveOut(rel string, isDir bool) bool {
	d := w.leftOutDir(rel, isDir)
	return d != "" && !w.ign.keeps(d, rel)
}

// leftOutDir is the first directory on rel's path (rel itself when isDir)
// whose name is in Options.LeaveOut, or "".
func (w *Watch) leftOutDir(rel string, isDir bool) string {
	if len(w.leaveOut) == 0 {
		return ""
	}
	for at := 0; ; {
		i := strings.IndexByte(rel[at:], '/')
		if i < 0 {
			if isDir && w.leaveOut[rel[at:]] {
				return rel
			}
			return ""
		}
		if w.leaveOut[rel[at:at+i]] {
			return rel[:at+i]
		}
		at += i + 1
	}
}

// unwatch forgets one directory.
func (w *Watch) unwatch(d string) {
	if _, ok := w.dirs[d]; ok {
		w.hub.unwatchDir(w.abs(d), w)
		delete(w.dirs, d)
	}
	delete(w.polled, d)
	for s := range w.skipped {
		if isUnder(s, d) {
			delete(w.skipped, s)
		}
	}
	if d != "" {
		w.ign.dropDomains(d)
	}
}

// unwatchTrees forgets every directory at or under one of removed.
func (w *Watch) unwatchTrees(removed map[string]struct{}) {
	under := func(d string) bool {
		for a := d; ; a = parentOf(a) {
			if _, ok := removed[a]; ok {
				return true
			}
			if a == "" {
				return false
			}
		}
	}
	for d := range w.dirs {
		if under(d) {
			w.unwatch(d)
		}
	}
	for d := range w.polled {
		if under(d) {
			w.unwatch(d)
		}
	}
	for d := range w.skipped {
		if under(d) {
			delete(w.skipped, d)
		}
	}
}

// parentOf returns the parent of a relative path, "" for the root.
func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// joinRel joins a relative directory and a name.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// isUnder reports whether rel is dir or inside it.
func isUnder(rel, dir string) bool {
	return dir == "" || rel == dir || strings.HasPrefix(rel, dir+"/")
}

// outermost keeps the directories of dirs that are not inside another one.
func outermost(dirs []string) []string {
	sort.Strings(dirs)
	var out []string
	for _, d := range dirs {
		if len(out) > 0 && isUnder(d, out[len(out)-1]) {
			continue
		}
		out = append(out, d)
	}
	return out
}
