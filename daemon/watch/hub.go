package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessiond/sessiond/daemon/identity"
	"github.com/sessiond/sessiond/daemon/state"
	"go.uber.org/zap"
)

// ErrClosed is returned by Hub.Watch after Hub.Close.
var ErrClosed = errors.New("watch: hub closed")

// gitIdleDefault is how long a project's git check-ignore coprocesses are
// kept after their last question: idle projects hold no process.
const gitIdleDefault = 20 * time.Second

// Hub multiplexes one inotify instance over many project watches.
//
// One fsnotify.Watcher serves every project: the kernel allows only
// fs.inotify.max_user_instances (128 by default) instances per user, and the
// daemon may watch a thousand projects. One goroutine reads the watcher and
// hands each event to the watches that own the event's directory; it never
// adds or removes watches itself (that is done by the watches' own
// goroutines), as fsnotify requires.
type Hub struct {
	log *zap.Logger
	fsw *fsnotify.Watcher // nil when inotify could not be had: every watch polls

	// Seams for tests; they default to the real thing.
	addWatch    func(abs string) error
	removeWatch func(abs string) error
	readDir     func(abs string) ([]fs.DirEntry, error)
	gitIdle     time.Duration

	mu      sync.RWMutex
	owners  map[string][]*Watch // watched directory (absolute) -> watches that own it
	watches map[*Watch]struct{}
	closed  bool
	nextID  int
	tmp     string // temporary dir: the empty repository, excludes files
	// tmpName names tmp in os.TempDir() (NameTemp); "" for a random name.
	tmpName string
	bdir    string // barrier dir in tmp, watched by the hub itself

	setsMu       sync.Mutex
	leaveOutSets map[string]map[string]bool

	// Barriers: one file out at a time (bcur), the callers that ask
	// meanwhile share the next one (bnext), made once bcur is seen.
	bmu   sync.Mutex
	bnum  uint64
	bfile string                   // the barrier file, named for the last round; "" before the first
	bwait map[uint64]*barrierRound // barrier file number -> its round
	bcur  *barrierRound
	bnext *barrierRound

	readerEnd chan struct{}
	counts    hubCounters
}

// NewHub starts the shared inotify instance and its reader. If the kernel
// refuses an inotify instance (the instance or descriptor limit is reached),
// the hub still works: every directory is then rescanned periodically, and
// the log says which sysctl would fix it.
func NewHub(log *zap.Logger) (*Hub, error) {
	return newHubWith(log, fsnotify.NewWatcher)
}

// newHubWith is NewHub with the watcher's constructor as a seam for tests.
func newHubWith(log *zap.Logger, newWatcher func() (*fsnotify.Watcher, error)) (*Hub, error) {
	if log == nil {
		log = zap.NewNop()
	}
	h := &Hub{
		log:       log,
		readDir:   readDirUnsorted,
		gitIdle:   gitIdleDefault,
		owners:    make(map[string][]*Watch),
		watches:   make(map[*Watch]struct{}),
		bwait:     make(map[uint64]*barrierRound),
		readerEnd: make(chan struct{}),
	}
	fsw, err := newWatcher()
	switch {
	case err == nil:
		h.fsw = fsw
		h.addWatch = fsw.Add
		h.removeWatch = fsw.Remove
		go h.read()
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		h.log.Warn("no inotify instance available; all projects will be rescanned periodically instead of watched",
			zap.Error(err), zap.String("fix", instancesAdvice()))
		h.addWatch = func(string) error { return fmt.Errorf("no inotify instance: %w", err) }
		h.removeWatch = func(string) error { return nil }
		close(h.readerEnd)
	default:
		return nil, fmt.Errorf("start inotify watcher: %w", err)
	}
	return h, nil
}

// Close stops every watch of the hub and the inotify reader. No goroutine or
// child process of the hub is left when it returns.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	ws := make([]*Watch, 0, len(h.watches))
	for w := range h.watches {
		ws = append(ws, w)
	}
	h.mu.Unlock()

	var errs []error
	for _, w := range ws {
		errs = append(errs, w.Close())
	}
	if h.fsw != nil {
		if err := h.fsw.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close inotify watcher: %w", err))
		}
	}
	<-h.readerEnd
	h.mu.Lock()
	tmp := h.tmp
	h.mu.Unlock()
	if tmp != "" {
		if err := os.RemoveAll(tmp); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", tmp, err))
		}
	}
	return errors.Join(errs...)
}

// read is the one goroutine that reads fsnotify.
func (h *Hub) read() {
	defer close(h.readerEnd)
	for {
		select {
		case ev, ok := <-h.fsw.Events:
			if !ok {
				return
			}
			h.counts.events.Add(1)
			h.dispatch(ev, time.Now())
		case err, ok := <-h.fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				h.counts.overflows.Add(1)
				h.overflow()
				continue
			}
			h.log.Warn("inotify error", zap.Error(err))
		}
	}
}

// dispatch hands an event to every watch that owns the event's directory
// (several projects may share one), and events about a watched directory
// itself (removed, moved away) to its owners.
//
// Attribute changes alone (and the extra one inotify sends on every unlink)
// are passed on too: they are not edits, but a mode change changes what a
// checkpoint stores.
func (h *Hub) dispatch(ev fsnotify.Event, now time.Time) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.bdir != "" && filepath.Dir(ev.Name) == h.bdir {
		if ev.Has(fsnotify.Create) {
			h.barrierSeen(filepath.Base(ev.Name))
		}
		return
	}
	for _, w := range h.owners[filepath.Dir(ev.Name)] {
		w.enqueue(w.relOf(ev.Name), ev.Op, now)
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		for _, w := range h.owners[ev.Name] {
			w.enqueue(w.relOf(ev.Name), ev.Op, now)
		}
	}
}

// overflow handles a lost-events notice: the kernel does not say whose events
// were lost, so every project rescans.
func (h *Hub) overflow() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	h.log.Warn("inotify event queue overflowed; events were lost, rescanning every project",
		zap.Int("projects", len(h.watches)),
		zap.String("fix", "sysctl fs.inotify.max_queued_events="+strconv.Itoa(max(2*readSysctl("max_queued_events"), 65536))))
	for w := range h.watches {
		w.requestRescan()
	}
}

// barrier returns once every event the kernel queued before the call has
// been dispatched to the watches. It creates a file in a directory the hub
// watches itself and waits for that file's event: inotify keeps the order
// of one instance's events, and the reader dispatches them in that order.
// Without inotify it returns at once (every directory is polled then).
func (h *Hub) barrier(ctx context.Context) error {
	if h.fsw == nil {
		return nil
	}
	dir, err := h.barrierDir()
	if err != nil {
		return err
	}
	// A barrier made before this call began would not do: the caller
	// waits for the one in flight to be seen, then shares the next with
	// every caller that came meanwhile, as writers share a group commit.
	h.bmu.Lock()
	var r *barrierRound
	if h.bcur == nil {
		r = &barrierRound{done: make(chan struct{})}
		h.bcur = r
		h.bmu.Unlock()
		h.makeBarrier(dir, r)
	} else {
		if h.bnext == nil {
			h.bnext = &barrierRound{done: make(chan struct{})}
		}
		r = h.bnext
		h.bmu.Unlock()
	}
	select {
	case <-r.done:
		return r.err
	case <-h.readerEnd:
		return nil // closed: nothing more will be dispatched
	case <-ctx.Done():
		return fmt.Errorf("wait for the watcher's pending events: %w", ctx.Err())
	}
}

// barrierRound is one barrier file and the callers waiting for it.
type barrierRound struct {
	done chan struct{} // closed once its event is read, or it failed
	err  error         // set before done is closed
	name string        // the file
}

// makeBarrier makes r's file in dir: the one barrier file, renamed from
// the last round's number to r's (inotify tells of the new name as of a
// created file), or a new file the first time. Renaming takes and frees no
// inode, where a file made and removed per round did, at every session's
// end: on ext4 without a journal each inode freed makes the next ones
// made nearby slower for a minute or more (bench/README.md, "At scale").
func (h *Hub) makeBarrier(dir string, r *barrierRound) {
	h.bmu.Lock()
	h.bnum++
	n := h.bnum
	last := h.bfile
	r.name = filepath.Join(dir, strconv.FormatUint(n, 10))
	h.bwait[n] = r
	// Named before it is: the next round may begin as soon as this one's
	// event is read, before this call goes on.
	h.bfile = r.name
	h.bmu.Unlock()
	err := errors.New("no barrier file yet")
	if last != "" {
		err = os.Rename(last, r.name)
	}
	if err != nil {
		var f *os.File
		if f, err = os.OpenFile(r.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			_ = f.Close()
		}
	}
	if err == nil {
		return
	}
	h.bmu.Lock()
	h.bfile = ""
	delete(h.bwait, n)
	h.bmu.Unlock()
	h.barrierDone(r, fmt.Errorf("make the watcher's barrier file: %w", err))
}

// barrierDone ends r and starts the round that waited for it.
func (h *Hub) barrierDone(r *barrierRound, err error) {
	h.bmu.Lock()
	r.err = err
	close(r.done)
	var next *barrierRound
	if h.bcur == r {
		h.bcur, h.bnext = h.bnext, nil
		next = h.bcur
	}
	dir := filepath.Dir(r.name)
	h.bmu.Unlock()
	if next != nil {
		go h.makeBarrier(dir, next)
	}
}

// barrierDir returns the directory of barrier files, watched on first use.
func (h *Hub) barrierDir() (string, error) {
	tmp, err := h.tempDir()
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bdir != "" {
		return h.bdir, nil
	}
	if h.closed {
		return "", ErrClosed
	}
	dir := filepath.Join(tmp, "barrier")
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("make the watcher's barrier dir: %w", err)
	}
	if err := h.fsw.Add(dir); err != nil {
		return "", fmt.Errorf("watch the watcher's barrier dir %s: %w", dir, err)
	}
	h.bdir = dir
	return dir, nil
}

// barrierSeen releases the waiters of a barrier file; mu is held for
// reading.
func (h *Hub) barrierSeen(name string) {
	n, err := strconv.ParseUint(name, 10, 64)
	if err != nil {
		return
	}
	h.bmu.Lock()
	r, ok := h.bwait[n]
	delete(h.bwait, n)
	h.bmu.Unlock()
	if ok {
		h.barrierDone(r, nil)
	}
}

// watchDir adds an inotify watch on abs for w. Several watches may own the
// same directory; the kernel watch is added by the first one.
func (h *Hub) watchDir(abs string, w *Watch) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	owners := h.owners[abs]
	for _, o := range owners {
		if o == w {
			return nil
		}
	}
	if len(owners) == 0 {
		if err := h.addWatch(abs); err != nil {
			return err
		}
	}
	h.owners[abs] = append(owners, w)
	return nil
}

// unwatchDir drops w's interest in abs; the kernel watch goes with the last
// owner. The error of a kernel watch that is already gone (its directory was
// deleted) is of no interest.
func (h *Hub) unwatchDir(abs string, w *Watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	owners := h.owners[abs]
	for i, o := range owners {
		if o == w {
			owners = append(owners[:i:i], owners[i+1:]...)
			break
		}
	}
	if len(owners) > 0 {
		h.owners[abs] = owners
		return
	}
	if _, ok := h.owners[abs]; ok {
		delete(h.owners, abs)
		_ = h.removeWatch(abs)
	}
}

// register adds w to the hub and gives it a name unique in the hub.
func (h *Hub) register(w *Watch) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	h.nextID++
	w.id = h.nextID
	h.watches[w] = struct{}{}
	return nil
}

func (h *Hub) forget(w *Watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.watches, w)
}

// NameTemp names the hub's temporary directory in os.TempDir(), before its
// first use: one name for each state dir (the daemon's lock on it keeps
// two daemons from sharing one), so that the directory a daemon killed
// before its Close left is removed by the next daemon of the same state
// dir rather than left in /tmp for good. A name taken by something that
// is not a directory of this process's user is left alone, and the
// directory gets a random name as without NameTemp.
func (h *Hub) NameTemp(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tmpName = name
}

// namedTemp makes the hub's named temporary directory, in place of the one
// an earlier daemon left there; "" when the name is another's.
func (h *Hub) namedTemp() string {
	dir := filepath.Join(os.TempDir(), h.tmpName)
	if fi, err := os.Lstat(dir); err == nil {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
			h.log.Warn("the watcher's temporary directory is taken by another's file; a random name is used", zap.String("path", dir))
			return ""
		}
		// What a daemon of this state dir that was killed left.
		if err := os.RemoveAll(dir); err != nil {
			h.log.Warn("remove the watcher's temporary directory a killed daemon left", zap.String("path", dir), zap.Error(err))
			return ""
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return ""
	}
	return dir
}

// tempDir returns the hub's temporary directory, made on first use.
func (h *Hub) tempDir() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tmp != "" {
		return h.tmp, nil
	}
	if h.closed {
		return "", ErrClosed
	}
	var dir string
	var err error
	if h.tmpName != "" {
		dir = h.namedTemp()
	}
	if dir == "" {
		dir, err = os.MkdirTemp("", "sessiond-watch-")
	}
	if err != nil {
		return "", fmt.Errorf("make temporary dir for the watcher: %w", err)
	}
	// Traversable, not listable: users reach their own directories in it.
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("make temporary dir for the watcher: %w", err)
	}
	h.tmp = dir
	return dir, nil
}

// userTemp is the temporary directory of the files the watcher's git
// reads for user (its excludes, its empty repository): the hub's own for
// the daemon's user; for another, a directory of the user's in it, which
// git running as the user can read and which the user writes in. The hub's
// directory is the daemon's and only the daemon writes in it, so the daemon
// makes the user's directory there and hands it to the user; everything in
// it is made with the user's rights.
func (h *Hub) userTemp(user *identity.User) (string, error) {
	tmp, err := h.tempDir()
	if err != nil || !user.Switches() {
		return tmp, err
	}
	dir := filepath.Join(tmp, "u"+strconv.Itoa(user.UID))
	err = os.Mkdir(dir, 0o700)
	switch {
	case err == nil:
		if err = os.Chown(dir, user.UID, user.GID); err != nil {
			os.Remove(dir)
		}
	case errors.Is(err, fs.ErrExist):
		err = nil
	}
	if err == nil {
		err = ownedDir(dir, user.UID)
	}
	if err != nil {
		return "", fmt.Errorf("make the watcher's directory for uid %d: %w", user.UID, err)
	}
	return dir, nil
}

// ownedDir checks that dir is a directory, not a link, of uid.
func ownedDir(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != uid {
		return fmt.Errorf("%s is not a directory of uid %d", dir, uid)
	}
	return nil
}

// emptyRepo returns the git directory of an empty repository: git
// check-ignore needs a repository, and one that is not a git work tree is
// checked against this one (its .gitignore files, the extra patterns), never
// against a repository made inside the project. It is made in user's
// directory, with the user's rights.
func (h *Hub) emptyRepo(user *identity.User) (string, error) {
	tmp, err := h.userTemp(user)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, "empty.git")
	err = state.FilesOf(user).Do(func() error {
		if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
			return nil
		}
		for _, d := range []string{"objects", "refs", "info"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
				return fmt.Errorf("make empty repository in %s: %w", dir, err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n\trepositoryformatversion = 0\n\tbare = true\n"), 0o600); err != nil {
			return fmt.Errorf("make empty repository in %s: %w", dir, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o600); err != nil {
			return fmt.Errorf("make empty repository in %s: %w", dir, err)
		}
		return nil
	})
	return dir, err
}

// isLimit reports whether an error from adding a watch means a kernel limit
// (and not a problem with the directory).
func isLimit(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// limitAdvice names the command that lifts the limit err hit.
func limitAdvice(err error) string {
	if errors.Is(err, syscall.ENOSPC) {
		n := max(524288, 2*readSysctl("max_user_watches"))
		return fmt.Sprintf("sysctl fs.inotify.max_user_watches=%d (persist it in /etc/sysctl.d/)", n)
	}
	return instancesAdvice()
}

func instancesAdvice() string {
	n := max(1024, 2*readSysctl("max_user_instances"))
	return fmt.Sprintf("sysctl fs.inotify.max_user_instances=%d (persist it in /etc/sysctl.d/), or raise the descriptor limit (LimitNOFILE= in the unit, ulimit -n)", n)
}

// readSysctl reads /proc/sys/fs/inotify/NAME, or 0.
func readSysctl(name string) int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/" + name)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// readDirUnsorted lists a directory without sorting it (os.ReadDir sorts).
func readDirUnsorted(abs string) ([]fs.DirEntry, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// leaveOutSet returns the set of the directory names in names, one map
// shared by every watch given the same list (most are given the default),
// never written after it is made.
func (h *Hub) leaveOutSet(names []string) map[string]bool {
	key := strings.Join(names, "\x00")
	h.setsMu.Lock()
	defer h.setsMu.Unlock()
	if set, ok := h.leaveOutSets[key]; ok {
		return set
	}
	set := make(map[string]bool, len(names))
	for _, name := range names {
		if name != "" && !strings.Contains(name, "/") {
			set[name] = true
		}
	}
	if h.leaveOutSets == nil {
		h.leaveOutSets = map[string]map[string]bool{}
	}
	if len(h.leaveOutSets) < maxLeaveOutSets {
		h.leaveOutSets[key] = set
	}
	return set
}

// maxLeaveOutSets bounds the lists remembered: past it, a list of its own
// gets a map of its own.
const maxLeaveOutSets = 64
