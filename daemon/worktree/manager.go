package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/state"
)

// IndexFile is the index's name in the daemon's state dir.
const IndexFile = "worktrees.json"

// BranchPrefix is the namespace of worktree branches: sessiond/NAME.
const BranchPrefix = "sessiond/"

// Entry states.
const (
	// StateCreating is a worktree being made; one found at a daemon's
	// start was cut short by a crash and is rolled back.
	StateCreating = "creating"
	// StateReady is a worktree sessions can run in.
	StateReady = "ready"
)

// Entry is one worktree of the index.
type Entry struct {
	// Name is the worktree's name, unique per repository; Branch is
	// BranchPrefix + Name.
	Name   string `json:"name"`
	Branch string `json:"branch"`
	// Path is the worktree's directory; Repo the main work tree of the
	// repository it belongs to.
	Path string `json:"path"`
	Repo string `json:"repo"`
	// Base is the commit it started from; From the ref given for it (the
	// branch HEAD was on, or --from).
	Base string `json:"base"`
	From string `json:"from,omitempty"`
	// UID is the user it belongs to.
	UID   int    `json:"uid"`
	State string `json:"state"`
	// Port is the port held for it (0: none), by Holder (a session id, or
	// "" while the worktree is being made); LastPort is the last one it
	// held, which it gets again when it is free.
	Port     int    `json:"port,omitempty"`
	Holder   string `json:"holder,omitempty"`
	LastPort int    `json:"last_port,omitempty"`
	// Remake is set while a worktree whose directory was deleted is made
	// again (State creating): a rollback keeps its entry and branch.
	Remake bool `json:"remake,omitempty"`
	// Session is the last session that ran in it.
	Session string `json:"session,omitempty"`
	// RepoUncommitted is how many uncommitted files the repository's work
	// tree had when the worktree was made from HEAD: they are not in it.
	RepoUncommitted int       `json:"repo_uncommitted,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

// Key identifies the entry: its repository and name.
func (e Entry) Key() Key { return Key{Repo: e.Repo, Name: e.Name} }

// Key identifies a worktree: names are unique per repository.
type Key struct {
	Repo string
	Name string
}

func (k Key) String() string { return k.Name + " of " + k.Repo }

// indexDoc is the index file's content.
type indexDoc struct {
	Version   int     `json:"version"`
	Worktrees []Entry `json:"worktrees"`
}

const indexVersion = 1

// Options configure a Manager.
type Options struct {
	// StateDir is the daemon's state dir, where the index lives.
	StateDir string
	Log      *zap.Logger
}

// Manager makes, lists and removes worktrees and holds their ports. Its
// methods are safe for concurrent use; operations on different worktrees
// run in parallel.
type Manager struct {
	path string
	log  *zap.Logger

	// loaded is set when the index was read from disk: Adopt is for an
	// index that was missing or corrupt.
	loaded bool

	mu      sync.Mutex
	entries map[Key]*Entry
}

// Loaded reports whether the index was read from disk at Open (false: it
// was missing, or corrupt and kept aside).
func (m *Manager) Loaded() bool { return m.loaded }

// Open loads the index from the state dir. A missing index is an empty
// one; a corrupt one is kept aside (state.ReadJSON) and the manager starts
// empty, the error saying so (the daemon rebuilds what its session records
// know, Adopt).
func Open(opt Options) (*Manager, error) {
	log := opt.Log
	if log == nil {
		log = zap.NewNop()
	}
	m := &Manager{path: filepath.Join(opt.StateDir, IndexFile), log: log, entries: map[Key]*Entry{}}
	var doc indexDoc
	err := state.ReadJSON(m.path, &doc)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return m, nil
	case err != nil:
		return m, fmt.Errorf("worktree index: %w", err)
	}
	for i := range doc.Worktrees {
		e := doc.Worktrees[i]
		if e.Name == "" || e.Repo == "" || e.Path == "" {
			log.Warn("worktree index: entry without name, repo or path dropped", zap.String("name", e.Name))
			continue
		}
		m.entries[e.Key()] = &e
	}
	m.loaded = true
	return m, nil
}

// saveLocked writes the index; m.mu is held.
func (m *Manager) saveLocked() error {
	doc := indexDoc{Version: indexVersion, Worktrees: make([]Entry, 0, len(m.entries))}
	for _, e := range m.entries {
		doc.Worktrees = append(doc.Worktrees, *e)
	}
	sortEntries(doc.Worktrees)
	if err := state.WriteJSON(m.path, doc); err != nil {
		return fmt.Errorf("write the worktree index: %w", err)
	}
	return nil
}

func sortEntries(list []Entry) {
	sort.Slice(list, func(i, j int) bool {
		if list[i].Repo != list[j].Repo {
			return list[i].Repo < list[j].Repo
		}
		return list[i].Name < list[j].Name
	})
}

// update changes the entry of k under the lock and writes the index; a
// failed write undoes the change.
func (m *Manager) update(k Key, fn func(e *Entry)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[k]
	if !ok {
		return fmt.Errorf("worktree %s: %w", k, ErrUnknown)
	}
	old := *e
	fn(e)
	if err := m.saveLocked(); err != nil {
		*e = old
		return err
	}
	return nil
}

// List returns every entry, by repository and name.
func (m *Manager) List() []Entry {
	m.mu.Lock()
	out := make([]Entry, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, *e)
	}
	m.mu.Unlock()
	sortEntries(out)
	return out
}

// Get returns the entry of k.
func (m *Manager) Get(k Key) (Entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[k]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// ByPath returns the entry whose directory is path.
func (m *Manager) ByPath(path string) (Entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		if e.Path == path {
			return *e, true
		}
	}
	return Entry{}, false
}

// Adopt adds an entry the index lost (a corrupt index kept aside) from
// what a session record says of its worktree, with the port a live
// session holds; it changes nothing when the index knows the worktree.
func (m *Manager) Adopt(e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[e.Key()]; ok {
		return nil
	}
	for _, o := range m.entries {
		if o.Path == e.Path {
			return nil
		}
	}
	e.State = StateReady
	m.entries[e.Key()] = &e
	if err := m.saveLocked(); err != nil {
		delete(m.entries, e.Key())
		return err
	}
	return nil
}

// forget drops the entry of k and writes the index.
func (m *Manager) forget(k Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[k]
	if !ok {
		return nil
	}
	delete(m.entries, k)
	if err := m.saveLocked(); err != nil {
		m.entries[k] = e
		return err
	}
	return nil
}
