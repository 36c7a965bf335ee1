// Package registry is the only index of sessions keyed by session id: the
// sessions of this daemon, live and ended, with the restart chains that
// their records' restart_of spell out (indexed as each session is added,
// so that a chain survives a daemon restart exactly as it was), and the
// lookups the API makes by id, name and id prefix.
package registry

import (
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// Registry holds the sessions. It is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	sessions map[string]*session.Session
	// successor maps a session to the one that restarted it, from the
	// latter's restart_of.
	successor map[string]string
	// added is closed (and replaced) whenever a session is added: a
	// follower of a restart chain waits on it.
	added chan struct{}
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{sessions: map[string]*session.Session{}, successor: map[string]string{}, added: make(chan struct{})}
}

// idAlphabet is lowercase Crockford base32: URL-safe and unambiguous to read.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns a fresh session id not yet in the registry.
func (r *Registry) NewID() string {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := make([]byte, len(b))
		for i, v := range b {
			id[i] = idAlphabet[int(v)%len(idAlphabet)]
		}
		r.mu.Lock()
		_, taken := r.sessions[string(id)]
		r.mu.Unlock()
		if !taken {
			return string(id)
		}
	}
}

// Add registers s, and the restart it is of.
func (r *Registry) Add(s *session.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions[s.ID()] = s
	if of := s.RestartOf(); of != "" {
		r.successor[of] = s.ID()
	}
	close(r.added)
	r.added = make(chan struct{})
}

// Remove drops the session id; the session it restarted may then be
// restarted again, as no record says otherwise.
func (r *Registry) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sessions[id]; ok {
		if of := s.RestartOf(); of != "" && r.successor[of] == id {
			delete(r.successor, of)
		}
	}
	delete(r.sessions, id)
	delete(r.successor, id)
}

// Get returns the session with exactly this id.
func (r *Registry) Get(id string) *session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

// Successor returns the session that restarted id, "" if none did.
func (r *Registry) Successor(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.successor[id]
}

// Added returns a channel closed at the next Add.
func (r *Registry) Added() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.added
}

// All returns every session, oldest first.
func (r *Registry) All() []*session.Session {
	r.mu.Lock()
	out := make([]*session.Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt().Equal(out[j].StartedAt()) {
			return out[i].StartedAt().Before(out[j].StartedAt())
		}
		return out[i].ID() < out[j].ID()
	})
	return out
}

// Ended counts the sessions that are not live.
func (r *Registry) Ended() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.sessions {
		if !ipc.Live(s.State()) {
			n++
		}
	}
	return n
}

// Lookup finds a session visible to c by its exact id, else by its name
// (the live session of that name, else the newest one), else as the only
// one whose id starts with ref.
func (r *Registry) Lookup(c ipc.Caller, ref string) (*session.Session, error) {
	if ref == "" {
		return nil, ipc.BadRequest("empty session id")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sessions[ref]; ok && Visible(c, s) {
		return s, nil
	}
	var named *session.Session
	for _, s := range r.sessions {
		if s.Name() != ref || !Visible(c, s) {
			continue
		}
		if ipc.Live(s.State()) {
			named = s
			break
		}
		if named == nil || s.StartedAt().After(named.StartedAt()) {
			named = s
		}
	}
	if named != nil {
		return named, nil
	}
	var found []*session.Session
	for sid, s := range r.sessions {
		if strings.HasPrefix(sid, ref) && Visible(c, s) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return nil, ipc.NotFound("no session %q (sessionctl ps -a lists them)", ref)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, s := range found {
		ids[i] = s.ID()
	}
	sort.Strings(ids)
	return nil, ipc.Ambiguous(ref, ids)
}

// Live returns the live sessions, in the project dir if it is not "".
func (r *Registry) Live(dir string) []*session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*session.Session
	for _, s := range r.sessions {
		if (dir == "" || s.ProjectDir() == dir) && ipc.Live(s.State()) {
			out = append(out, s)
		}
	}
	return out
}

// NameHolder returns the live session of user uid named name, if any.
func (r *Registry) NameHolder(uid int, name string) *session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nameHolder(uid, name)
}

func (r *Registry) nameHolder(uid int, name string) *session.Session {
	for _, s := range r.sessions {
		if s.UID() == uid && s.Name() == name && ipc.Live(s.State()) {
			return s
		}
	}
	return nil
}

// FreeName returns base, or base-2, base-3, ... : the first name no live
// session of user uid holds.
func (r *Registry) FreeName(uid int, base string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := base
	for i := 2; r.nameHolder(uid, name) != nil; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

// IsLive reports whether the session id is registered and live.
func (r *Registry) IsLive(id string) bool {
	s := r.Get(id)
	return s != nil && ipc.Live(s.State())
}

// Visible reports whether caller c may see session s: root sees all, a
// user sees their own.
func Visible(c ipc.Caller, s *session.Session) bool {
	return c.Root() || c.UID == s.UID()
}

// Records returns the record of every session, oldest first.
func (r *Registry) Records() []ipc.Session {
	all := r.All()
	out := make([]ipc.Session, len(all))
	for i, s := range all {
		out[i] = s.Snapshot()
	}
	return out
}

// LiveIn returns the id of a live session in the project dir, "" for none.
func (r *Registry) LiveIn(dir string) string {
	if live := r.Live(dir); len(live) > 0 {
		return live[0].ID()
	}
	return ""
}
