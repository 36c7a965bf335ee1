// Package registry is the only index of sessions keyed by session id: the
// sessions of this daemon, live and ended, with the restart chains that
// their records' restart_of spell out (indexed as each session is added,
// so that a chain survives a daemon restart exactly as it was), and the
// lookups the API makes by id, name and id prefix.
package registry

import (
	"crypto/rand"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

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
	// byName are the sessions of each name, live or not.
	byName map[string]map[string]*session.Session
	// live indexes the sessions added live, by user and by project, so
	// that no start looks at another user's or project's sessions.
	live liveIndex
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{
		sessions: map[string]*session.Session{}, successor: map[string]string{}, added: make(chan struct{}),
		byName: map[string]map[string]*session.Session{}, live: newLiveIndex(),
	}
}

// idAlphabet is lowercase Crockford base32: URL-safe and unambiguous to read.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns a fresh session id not yet in the registry.
func (r *Registry) NewID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.newID()
}

func (r *Registry) newID() string {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := make([]byte, len(b))
		for i, v := range b {
			id[i] = idAlphabet[int(v)%len(idAlphabet)]
		}
		if _, taken := r.sessions[string(id)]; !taken {
			return string(id)
		}
	}
}

// Add registers s, and the restart it is of.
func (r *Registry) Add(s *session.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(s)
}

func (r *Registry) add(s *session.Session) {
	r.sessions[s.ID()] = s
	if of := s.RestartOf(); of != "" {
		r.successor[of] = s.ID()
	}
	named := r.byName[s.Name()]
	if named == nil {
		named = map[string]*session.Session{}
		r.byName[s.Name()] = named
	}
	named[s.ID()] = s
	if ipc.Live(s.State()) {
		r.live.add(s)
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
		r.live.drop(s)
		if named := r.byName[s.Name()]; named != nil {
			delete(named, id)
			if len(named) == 0 {
				delete(r.byName, s.Name())
			}
		}
	}
	delete(r.sessions, id)
	delete(r.successor, id)
}

// Release lets go of what the ended session s held: its name is free
// again and it no longer counts against a limit.
func (r *Registry) Release(s *session.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live.drop(s)
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
	// Each session's start is read once, not at each comparison: a
	// session's published state is a pointer of its own, and reading it
	// twice a comparison was a tenth of a listing's CPU.
	r.mu.Lock()
	byStart := make([]startedSession, 0, len(r.sessions))
	for _, s := range r.sessions {
		byStart = append(byStart, startedSession{s.StartedAt(), s})
	}
	r.mu.Unlock()
	slices.SortFunc(byStart, func(a, b startedSession) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.s.ID(), b.s.ID())
	})
	out := make([]*session.Session, len(byStart))
	for i, b := range byStart {
		out[i] = b.s
	}
	return out
}

// startedSession is a session with its start, for All's sort.
type startedSession struct {
	at time.Time
	s  *session.Session
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

// Lookup finds the session visible to c that ref names, in this order:
//
//  1. the session whose id is ref;
//  2. for "USER/NAME", user USER's session named NAME (the live one, else
//     the newest);
//  3. the session named ref: the live one, else the newest; when the live
//     sessions of that name belong to several users (only root sees them
//     all), it is an error that lists them as USER/NAME;
//  4. the only session whose id starts with ref.
//
// A ref that is both a name (3) and the prefix of another session's id (4)
// is an error that names both: neither shadows the other.
func (r *Registry) Lookup(c ipc.Caller, ref string) (*session.Session, error) {
	if ref == "" {
		return nil, ipc.BadRequest("empty session id")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sessions[ref]; ok && Visible(c, s) {
		return s, nil
	}
	if owner, name, ok := strings.Cut(ref, "/"); ok {
		u, err := user.Lookup(owner)
		if err != nil {
			return nil, ipc.NotFound("no session %q: no user %q", ref, owner)
		}
		uid, _ := strconv.Atoi(u.Uid)
		if s := r.named(c, name, uid); s != nil {
			return s, nil
		}
		return nil, ipc.NotFound("no session %q (sessionctl ps -a lists them)", ref)
	}
	named := r.named(c, ref, -1)
	if named == nil {
		// The name may be held by several users' live sessions.
		if holders := r.liveHolders(c, ref); len(holders) > 1 {
			return nil, ipc.AmbiguousName(ref, holders)
		}
	}
	var found []*session.Session
	for sid, s := range r.sessions {
		if strings.HasPrefix(sid, ref) && Visible(c, s) && s != named {
			found = append(found, s)
		}
	}
	if named != nil {
		if len(found) > 0 {
			return nil, ipc.Ambiguous(ref, append([]string{named.ID() + " (named " + ref + ")"}, ids(found)...))
		}
		return named, nil
	}
	switch len(found) {
	case 0:
		return nil, ipc.NotFound("no session %q (sessionctl ps -a lists them)", ref)
	case 1:
		return found[0], nil
	}
	return nil, ipc.Ambiguous(ref, ids(found))
}

// named is the session visible to c named name, of user uid (-1: any
// user): the live one, else the newest; nil when there is none, or when
// the live ones of that name are several users'.
func (r *Registry) named(c ipc.Caller, name string, uid int) *session.Session {
	var live, newest *session.Session
	for _, s := range r.byName[name] {
		if !Visible(c, s) || (uid >= 0 && s.UID() != uid) {
			continue
		}
		if ipc.Live(s.State()) {
			if live != nil && live.UID() != s.UID() {
				return nil
			}
			live = s
			continue
		}
		if newest == nil || s.StartedAt().After(newest.StartedAt()) {
			newest = s
		}
	}
	if live != nil {
		return live
	}
	return newest
}

// liveHolders are the live sessions visible to c named name, as
// USER/NAME, sorted.
func (r *Registry) liveHolders(c ipc.Caller, name string) []string {
	var out []string
	for _, s := range r.byName[name] {
		if Visible(c, s) && ipc.Live(s.State()) {
			who := strconv.Itoa(s.UID())
			if u, err := user.LookupId(who); err == nil {
				who = u.Username
			}
			out = append(out, who+"/"+name+" ("+s.ID()+")")
		}
	}
	sort.Strings(out)
	return out
}

// ids are the sessions' ids, sorted.
func ids(ss []*session.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID()
	}
	sort.Strings(out)
	return out
}

// Live returns the live sessions, in the project dir if it is not "".
func (r *Registry) Live(dir string) []*session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live.in(dir)
}

// NameHolder returns the live session of user uid named name, if any.
func (r *Registry) NameHolder(uid int, name string) *session.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live.holder(uid, name)
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

// LiveOver returns a live session whose project is dir, is inside dir or
// holds it, and that project ("" if none): the sessions a change to dir's
// files reaches.
func (r *Registry) LiveOver(dir string) (id, project string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, m := range r.live.projects {
		if p != dir && !inside(p, dir) && !inside(dir, p) {
			continue
		}
		if live := r.live.live(m); len(live) > 0 {
			return live[0].ID(), p
		}
	}
	return "", ""
}

// inside reports whether path a is inside directory b (not b itself).
func inside(a, b string) bool {
	if b == "/" {
		return a != "/" && strings.HasPrefix(a, "/")
	}
	return strings.HasPrefix(a, b+"/")
}

// LiveIn returns the id of a live session in the project dir, "" for none.
func (r *Registry) LiveIn(dir string) string {
	if live := r.Live(dir); len(live) > 0 {
		return live[0].ID()
	}
	return ""
}
