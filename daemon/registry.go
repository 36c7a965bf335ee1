package daemon

import (
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// registry is the only map of sessions, live and ended.
type registry struct {
	mu       sync.Mutex
	sessions map[string]*session.Session
}

func newRegistry() *registry { return &registry{sessions: map[string]*session.Session{}} }

// idAlphabet is lowercase Crockford base32: URL-safe and unambiguous to read.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// newID returns a fresh session id not yet in the registry.
func (r *registry) newID() string {
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

func (r *registry) add(s *session.Session) {
	r.mu.Lock()
	r.sessions[s.ID()] = s
	r.mu.Unlock()
}

func (r *registry) remove(id string) {
	r.mu.Lock()
	delete(r.sessions, id)
	r.mu.Unlock()
}

// get returns the session with exactly this id.
func (r *registry) get(id string) *session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

// all returns every session, oldest first.
func (r *registry) all() []*session.Session {
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

// ended counts the sessions that are not live.
func (r *registry) ended() int {
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

// lookup finds a session visible to c by its exact id, else by its name
// (the live session of that name, else the newest one), else as the only
// one whose id starts with id.
func (r *registry) lookup(c ipc.Caller, id string) (*session.Session, error) {
	if id == "" {
		return nil, ipc.BadRequest("empty session id")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sessions[id]; ok && visible(c, s) {
		return s, nil
	}
	var named *session.Session
	for _, s := range r.sessions {
		if s.Name() != id || !visible(c, s) {
			continue
		}
		if ipc.Live(s.Snapshot().State) {
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
		if strings.HasPrefix(sid, id) && visible(c, s) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return nil, ipc.NotFound("no session %q (sessionctl ps -a lists them)", id)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, s := range found {
		ids[i] = s.ID()
	}
	sort.Strings(ids)
	return nil, ipc.Ambiguous(id, ids)
}

// live returns the live sessions, in the project dir if it is not "".
func (r *registry) live(dir string) []*session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*session.Session
	for _, s := range r.sessions {
		if (dir == "" || s.ProjectDir() == dir) && ipc.Live(s.Snapshot().State) {
			out = append(out, s)
		}
	}
	return out
}

// nameHolder returns the live session of user uid named name, if any.
func (r *registry) nameHolder(uid int, name string) *session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sessions {
		if s.UID() == uid && s.Name() == name && ipc.Live(s.Snapshot().State) {
			return s
		}
	}
	return nil
}

// freeName returns base, or base-2, base-3, ... : the first name no live
// session of user uid holds.
func (r *registry) freeName(uid int, base string) string {
	name := base
	for i := 2; r.nameHolder(uid, name) != nil; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

// isLive reports whether the session id is registered and live.
func (r *registry) isLive(id string) bool {
	s := r.get(id)
	return s != nil && ipc.Live(s.Snapshot().State)
}

// visible reports whether caller c may see session s: root sees all, a
// user sees their own.
func visible(c ipc.Caller, s *session.Session) bool {
	return c.Root() || c.UID == s.UID()
}
