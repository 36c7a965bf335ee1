package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Mode says where a checkpoint goes.
type Mode string

const (
	// ModeRef commits the work tree to refs/sessiond/checkpoints/<session>
	// without touching HEAD, the branch, the index, the stash or any file.
	ModeRef Mode = "ref"
	// ModeCommit commits work in progress on the current branch with the
	// user's own index (git add -A && git commit), as the source documents do.
	ModeCommit Mode = "commit"
)

// Defaults for Options and requests.
const (
	// DefaultMaxFileSize is the size above which an untracked file is left
	// out of a checkpoint (checkpoint_max_file).
	DefaultMaxFileSize = 10 << 20
	// DefaultKeep is how many checkpoints a session ref keeps.
	DefaultKeep = 100
	// DefaultMaxAge is how old a checkpoint may grow before retention folds
	// it away (a ref's newest checkpoint is always kept).
	DefaultMaxAge = 30 * 24 * time.Hour
	// DefaultFullEvery is how many incremental checkpoints may follow a full
	// scan of the work tree before the next checkpoint is a full one again.
	DefaultFullEvery = 100
	// DefaultFullAfter is how long after a full scan the next checkpoint is
	// a full one again (checkpoint_full_every).
	DefaultFullAfter = time.Hour
)

// DefaultLeaveOut names directories that are left out of a checkpoint when
// they hold untracked, unignored files: dependency trees, virtual
// environments, caches and build output that can be regenerated.
var DefaultLeaveOut = []string{
	"node_modules", "bower_components", ".venv", "venv", "__pycache__",
	".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
	"target", "dist", ".gradle", ".next", ".nuxt", ".turbo", ".parcel-cache",
	".terraform", ".cache",
}

// Options configure a Checkpointer: what holds for every call. The zero
// value works for git projects; non-git projects need StateDir (or a
// request's ShadowRoot). What may differ between calls (the file size
// limit, the user git runs as, where shadow repositories live) is in the
// requests.
type Options struct {
	// StateDir holds the default shadow root, StateDir/shadow: shadow
	// repositories of non-git projects are StateDir/shadow/<project-id>.git
	// unless a request names another ShadowRoot.
	StateDir string
	// MaxFileSize is the default of TakeRequest.MaxFileSize; default
	// DefaultMaxFileSize (10 MiB).
	MaxFileSize int64
	// Keep is the number of checkpoints kept per session ref; default
	// DefaultKeep. Take folds older ones away once a ref holds a quarter more.
	Keep int
	// MaxAge is how old a checkpoint may grow before retention folds it
	// away; default DefaultMaxAge (30 days). A ref's newest checkpoint is
	// kept whatever its age.
	MaxAge time.Duration
	// FullEvery and FullAfter are the defaults of the TakeRequest fields:
	// DefaultFullEvery (100) and DefaultFullAfter (1 hour).
	FullEvery int
	FullAfter time.Duration
	// LeaveOut names directories left out when untracked; default
	// DefaultLeaveOut. Give a watch.Options the same list.
	LeaveOut []string
	// Timeout bounds each git command; default DefaultTimeout.
	Timeout time.Duration
	// Log receives warnings that do not fail an operation (a failed
	// automatic prune, an incremental checkpoint that fell back to a full
	// scan); default a no-op logger.
	Log *zap.Logger
}

// Checkpointer takes, lists, restores and prunes checkpoints. It runs one
// operation at a time per repository (keyed by its common git dir, however
// the calls differ), and operations on different repositories in parallel.
// A daemon keeps one. It is safe for concurrent use.
type Checkpointer struct {
	opt Options
	log *zap.Logger

	mu    sync.Mutex
	locks map[string]chan struct{} // per repository (common git dir)

	filters filterCache
	repos   repoCache
	states  stateStore
	aged    agedPrunes
	temps   *tempNames
	clock   func() time.Time // tests move it; nil: time.Now
}

func (c *Checkpointer) now() time.Time {
	if c.clock != nil {
		return c.clock()
	}
	return time.Now()
}

// New returns a Checkpointer with opt's zero fields set to their defaults.
func New(opt Options) *Checkpointer {
	if opt.MaxFileSize <= 0 {
		opt.MaxFileSize = DefaultMaxFileSize
	}
	if opt.Keep <= 0 {
		opt.Keep = DefaultKeep
	}
	if opt.MaxAge <= 0 {
		opt.MaxAge = DefaultMaxAge
	}
	if opt.FullEvery == 0 {
		opt.FullEvery = DefaultFullEvery
	}
	if opt.FullAfter == 0 {
		opt.FullAfter = DefaultFullAfter
	}
	if opt.LeaveOut == nil {
		opt.LeaveOut = DefaultLeaveOut
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	log := opt.Log
	if log == nil {
		log = zap.NewNop()
	}
	return &Checkpointer{opt: opt, log: log.Named("checkpoint"), locks: make(map[string]chan struct{}), temps: newTempNames(opt.StateDir)}
}

// lock waits until no other operation of this Checkpointer runs on the
// repository key, or ctx ends.
func (c *Checkpointer) lock(ctx context.Context, key string) (unlock func(), err error) {
	c.mu.Lock()
	ch, ok := c.locks[key]
	if !ok {
		ch = make(chan struct{}, 1)
		c.locks[key] = ch
	}
	c.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for another checkpoint operation on %s: %w", key, ctx.Err())
	}
}

// open resolves a project and takes its repository lock.
func (c *Checkpointer) open(ctx context.Context, w where, create bool) (r *repo, exists bool, unlock func(), err error) {
	r, exists, err = c.resolve(ctx, w, create)
	if err != nil {
		return nil, false, nil, err
	}
	unlock, err = c.lock(ctx, r.commonDir)
	if err != nil {
		return nil, false, nil, err
	}
	return r, exists, unlock, nil
}

// resolve finds a project's repository and what its git commands need:
// the overrides that turn its filter drivers off. What git said about a
// directory is kept while the .git it found is the same file or directory
// (a checkpoint of an unchanged project then costs no git rev-parse).
func (c *Checkpointer) resolve(ctx context.Context, w where, create bool) (*repo, bool, error) {
	r, exists, err := c.resolvedRepo(ctx, w, create)
	if err != nil || !exists {
		return r, exists, err
	}
	if r.config, err = c.filterConfig(ctx, r); err != nil {
		return nil, false, err
	}
	r.temps = c.temps
	return r, true, nil
}

// resolvedRepo is resolve with the cache of resolutions.
func (c *Checkpointer) resolvedRepo(ctx context.Context, w where, create bool) (*repo, bool, error) {
	p, err := projectPath(w.dir, w.cred)
	if err != nil {
		return nil, false, err
	}
	uid := -1
	if w.cred != nil {
		uid = int(w.cred.UID)
	}
	key := fmt.Sprintf("%s\x00%s\x00%d", p, w.shadowRoot, uid)
	c.repos.mu.Lock()
	cached, ok := c.repos.m[key]
	c.repos.mu.Unlock()
	if ok && cached.valid() {
		r := cached.r
		r.cred, r.timeout = w.cred, c.opt.Timeout
		return &r, true, nil
	}
	w.dir = p
	r, exists, err := resolve(ctx, w, c.opt.StateDir, c.opt.Timeout, create)
	if err != nil || !exists {
		return r, exists, err
	}
	cached = cachedRepo{r: *r, marker: r.marker()}
	cached.r.cred, cached.r.config = nil, nil
	cached.sig = dirSig(cached.marker)
	c.repos.mu.Lock()
	if c.repos.m == nil || len(c.repos.m) > 4096 {
		c.repos.m = map[string]cachedRepo{}
	}
	c.repos.m[key] = cached
	c.repos.mu.Unlock()
	return r, true, nil
}

// repoCache keeps what git said about each project directory.
type repoCache struct {
	mu sync.Mutex
	m  map[string]cachedRepo
}

type cachedRepo struct {
	r      repo
	marker string  // the .git that made the answer (or a shadow repository's HEAD)
	sig    fileSig // its identity then
}

// marker is the file whose identity keeps a resolution true.
func (r *repo) marker() string {
	if r.shadow {
		return filepath.Join(r.gitDir, "HEAD")
	}
	return filepath.Join(r.top, ".git")
}

func (cr cachedRepo) valid() bool {
	if cr.r.shadow {
		// A shadow repository serves a directory in no work tree: one that
		// became one is resolved again.
		if _, err := os.Lstat(filepath.Join(cr.r.project, ".git")); err == nil {
			return false
		}
	}
	return cr.sig.exists && dirSig(cr.marker) == cr.sig
}

// dirSig is a file's identity (device and inode), not its times: a .git
// directory's mtime moves whenever git writes in it.
func dirSig(path string) fileSig {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileSig{}
	}
	sig := fileSig{exists: true}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sig.ino, sig.size = st.Ino, uint64(st.Dev)
	}
	if !fi.IsDir() {
		sig.mtime = fi.ModTime().UnixNano() // a gitfile rewritten in place
	}
	return sig
}

// sessionIDPattern is compiled when first used: its bounded repetition
// compiles to some 100 KiB, which every process of the binary (a terminal
// holder too) would otherwise keep from its start.
var sessionIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// checkSessionID makes sure id is usable as the last component of a ref.
func checkSessionID(id string) error {
	if !sessionIDPattern().MatchString(id) || strings.Contains(id, "..") || strings.HasSuffix(id, ".lock") || strings.HasSuffix(id, ".") {
		return fmt.Errorf("session id %q: %w", id, ErrBadSessionID)
	}
	return nil
}
