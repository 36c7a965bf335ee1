package watch

import (
	"os"
	"path/filepath"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/identity"
	"github.com/sessiond/sessiond/daemon/lazylog"
	"github.com/sessiond/sessiond/daemon/state"
)

// Prepared is git's view of a project's ignore rules, begun ahead of its
// watch (Hub.Prepare): in a repository, what a watch waits for longest at
// its start is git, which lists the tracked files its rules match and
// starts the check-ignore that answers the scan. A session begins it with
// its start and watches once its files are made; the watch that is given
// it (Options.Prepared) takes it over, and Close lets go of one never
// taken.
type Prepared struct {
	root     string // resolved
	patterns []string
	user     *identity.User
	ign      *ignorer
	quit     chan struct{}
	ready    chan struct{} // closed once the ignorer is warm

	mu     sync.Mutex
	closed bool // taken or let go
}

// Prepare begins, in the background, git's view of the ignore rules of
// root for a watch with opt. It returns nil where there is nothing to
// begin: root cannot be resolved, is not in a git repository (the scan of
// a project outside one asks git only what its ignore files say, later
// if at all), or has no directory for the scan to ask git about.
func (h *Hub) Prepare(root string, opt Options) *Prepared {
	if !filepath.IsAbs(root) {
		return nil
	}
	files := state.FilesOf(opt.User)
	real, err := files.Resolve(root)
	if err != nil {
		return nil
	}
	asks := false
	_ = files.Do(func() error {
		if findRepoTop(real) == "" {
			return nil
		}
		entries, err := os.ReadDir(real)
		if err != nil {
			return nil
		}
		leaveOut := h.leaveOutSet(opt.LeaveOut)
		for _, e := range entries {
			if name := e.Name(); e.IsDir() && name != ".git" && name != state.DirName && !leaveOut[name] {
				asks = true
				break
			}
		}
		return nil
	})
	if !asks {
		return nil
	}
	p := &Prepared{root: real, patterns: slices.Clone(opt.Ignore), user: opt.User,
		quit: make(chan struct{}), ready: make(chan struct{})}
	p.ign = newIgnorer(h, func() *zap.Logger { return lazylog.With(h.log, zap.String("project", real)) },
		real, p.patterns, "prepared", opt.User, p.quit)
	go func() {
		defer close(p.ready)
		// With the project user's rights, as the scan asks git.
		_ = files.Do(func() error {
			p.ign.warm()
			return nil
		})
	}()
	return p
}

// take hands the ignorer to the watch of root with patterns and user,
// once it is warm, with the channel whose closing stops its git: the
// watch's quit from now on. It returns nil if p was begun for another
// watch, or let go.
func (p *Prepared) take(root string, patterns []string, user *identity.User) (*ignorer, chan struct{}) {
	if p == nil {
		return nil, nil
	}
	p.mu.Lock()
	closed := p.closed
	p.closed = true
	p.mu.Unlock()
	if closed {
		return nil, nil
	}
	<-p.ready
	if p.root != root || !slices.Equal(p.patterns, patterns) || p.user.ID() != user.ID() {
		close(p.quit)
		p.ign.close()
		return nil, nil
	}
	// What changed since git read it (the session's start adds its
	// .sessiond to info/exclude) is read again, by a git started anew.
	if p.ign.excludesChanged() {
		p.ign.stop()
	}
	return p.ign, p.quit
}

// Close lets go of a Prepared that no watch took: its git is stopped. It
// does nothing once a watch took it, and may be called more than once.
func (p *Prepared) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	closed := p.closed
	p.closed = true
	p.mu.Unlock()
	if closed {
		return
	}
	close(p.quit)
	<-p.ready
	p.ign.close()
}

// warm starts the root domain's git: its tracked files that ignore rules
// match, and its check-ignore. A failure here is left to the first
// question, which starts git again and says why.
func (ig *ignorer) warm() {
	ig.addDomain("")
	if c := ig.domains[""]; c.cmd == nil {
		_ = c.start()
	}
}
