package daemon

import (
	"crypto/rand"
	"sort"
	"strings"
	"sync"

	"github.com/sessiond/sessiond/ipc"
)

// registry is the only map of sessions, live and ended.
type registry struct {
	mu       sync.Mutex
	sessions map[string]*session
}

func newRegistry() *registry { return &registry{sessions: map[string]*session{}} }

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

func (r *registry) add(s *session) {
	r.mu.Lock()
	r.sessions[s.id] = s
	r.mu.Unlock()
}

func (r *registry) remove(id string) {
	r.mu.Lock()
	delete(r.sessions, id)
	r.mu.Unlock()
}

// all returns every session, oldest first.
func (r *registry) all() []*session {
	r.mu.Lock()
	out := make([]*session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].startedAt.Equal(out[j].startedAt) {
			return out[i].startedAt.Before(out[j].startedAt)
		}
		return out[i].id < out[j].id
	})
	return out
}

// lookup finds the session with id, or the only one whose id starts with
// it, among those visible to c.
func (r *registry) lookup(c ipc.Caller, id string) (*session, error) {
	if id == "" {
		return nil, ipc.BadRequest("empty session id")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sessions[id]; ok && visible(c, s) {
		return s, nil
	}
	var found []*session
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
		ids[i] = s.id
	}
	sort.Strings(ids)
	return nil, ipc.Ambiguous(id, ids)
}

// liveInProject returns the live sessions of a project directory.
func (r *registry) liveInProject(dir string) []*session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*session
	for _, s := range r.sessions {
		if s.projectDir == dir && ipc.Live(s.snapshot().State) {
			out = append(out, s)
		}
	}
	return out
}

// visible reports whether caller c may see session s: root sees all, a
// user sees their own.
func visible(c ipc.Caller, s *session) bool {
	return c.Root() || c.UID == s.uid
}
