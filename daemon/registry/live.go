package registry

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// liveIndex holds the sessions added live, by user and by project. A
// session leaves it when the registry hears it ended (Release, Remove); one
// found ended before that is dropped as it is found, so an index is never
// wrong for long and never wrong about who holds a name.
type liveIndex struct {
	all      map[string]*session.Session
	users    map[int]*userIndex
	projects map[string]map[string]*session.Session
}

// userIndex is one user's live sessions and the names they hold.
type userIndex struct {
	live  map[string]*session.Session
	names map[string]*session.Session
	// next is, for each base name FreeName was asked for, the lowest
	// suffix that may be free (1 for the base itself, n for base-n).
	next map[string]int
}

func newLiveIndex() liveIndex {
	return liveIndex{
		all: map[string]*session.Session{}, users: map[int]*userIndex{},
		projects: map[string]map[string]*session.Session{},
	}
}

func (x *liveIndex) user(uid int) *userIndex {
	u := x.users[uid]
	if u == nil {
		u = &userIndex{live: map[string]*session.Session{}, names: map[string]*session.Session{}, next: map[string]int{}}
		x.users[uid] = u
	}
	return u
}

func (x *liveIndex) add(s *session.Session) {
	x.all[s.ID()] = s
	u := x.user(s.UID())
	u.live[s.ID()] = s
	u.names[s.Name()] = s
	p := x.projects[s.ProjectDir()]
	if p == nil {
		p = map[string]*session.Session{}
		x.projects[s.ProjectDir()] = p
	}
	p[s.ID()] = s
}

// drop takes s out of the index and frees its name.
func (x *liveIndex) drop(s *session.Session) {
	if x.all[s.ID()] != s {
		return
	}
	delete(x.all, s.ID())
	if u := x.users[s.UID()]; u != nil {
		delete(u.live, s.ID())
		if u.names[s.Name()] == s {
			delete(u.names, s.Name())
			u.freed(s.Name())
		}
		if len(u.live) == 0 && len(u.names) == 0 {
			delete(x.users, s.UID())
		}
	}
	if p := x.projects[s.ProjectDir()]; p != nil {
		delete(p, s.ID())
		if len(p) == 0 {
			delete(x.projects, s.ProjectDir())
		}
	}
}

// freed lowers the next free suffix of the base name that name is.
func (u *userIndex) freed(name string) {
	base, n := name, 1
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if v, err := strconv.Atoi(name[i+1:]); err == nil && v >= 2 {
			base, n = name[:i], v
		}
	}
	if next, ok := u.next[base]; ok && n < next {
		u.next[base] = n
	}
}

// live returns the sessions of m that are still live, dropping those that
// are not.
func (x *liveIndex) live(m map[string]*session.Session) []*session.Session {
	out := make([]*session.Session, 0, len(m))
	var ended []*session.Session
	for _, s := range m {
		if ipc.Live(s.State()) {
			out = append(out, s)
		} else {
			ended = append(ended, s)
		}
	}
	for _, s := range ended {
		x.drop(s)
	}
	return out
}

// in returns the live sessions in the project dir ("" for every project).
func (x *liveIndex) in(dir string) []*session.Session {
	if dir == "" {
		return x.live(x.all)
	}
	return x.live(x.projects[dir])
}

// count is how many sessions of m are live.
func (x *liveIndex) count(m map[string]*session.Session) int {
	return len(x.live(m))
}

// holder returns user uid's live session named name.
func (x *liveIndex) holder(uid int, name string) *session.Session {
	u := x.users[uid]
	if u == nil {
		return nil
	}
	s := u.names[name]
	if s != nil && !ipc.Live(s.State()) {
		x.drop(s)
		return nil
	}
	return s
}

// freeName returns base, or base-2, base-3, ...: the first name no live
// session of user uid holds. It starts where the last one it gave left
// off, or lower where a name of that base was freed since, so a user with
// thousands of sessions of one project gets a name at once.
func (x *liveIndex) freeName(uid int, base string) string {
	u := x.user(uid)
	n := max(u.next[base], 1)
	for ; ; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		if x.holder(uid, name) == nil {
			u.next[base] = n + 1
			return name
		}
	}
}

// Claim is what a start asks of the registry, checked and registered in
// one step: the checks cost the same whoever else has sessions.
type Claim struct {
	UID int
	// Dir is the project; Exclusive refuses a start while another session
	// of Dir is live (a project that is not concurrent).
	Dir       string
	Exclusive bool
	// Name is the name asked for; "" takes the first free one of Base.
	Name, Base string
	// RestartOf is the session this one restarts: refused if another
	// restarted it already.
	RestartOf string
	// ID is the session's id when the start chose it already.
	ID string
	// MaxLive and MaxLivePerUser bound the live sessions, in all and of
	// UID (0: no bound).
	MaxLive, MaxLivePerUser int
	// New makes the session, with the id and name given; it is called
	// with the registry locked and must not block.
	New func(id, name string) *session.Session
}

// Register checks the claim and, if it holds, makes and registers its
// session, all under the registry's lock for a few map operations.
func (r *Registry) Register(c Claim) (*session.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.RestartOf != "" {
		// The chain is the records': one restart of a session, whoever
		// asks and whenever, the daemon restarted or not.
		if next := r.successor[c.RestartOf]; next != "" {
			return nil, ipc.Conflict("session %s was restarted already, as %s: restart that one", c.RestartOf, next)
		}
	}
	if c.Exclusive {
		if live := r.live.in(c.Dir); len(live) > 0 {
			return nil, ipc.Conflict("project %s already has a live session (%s); stop it first, or set concurrent = true in its sessiond.toml", c.Dir, live[0].ID())
		}
	}
	if c.MaxLive > 0 && len(r.live.all) >= c.MaxLive && r.live.count(r.live.all) >= c.MaxLive {
		return nil, ipc.Conflict("max_sessions (%d) live sessions already run", c.MaxLive)
	}
	if c.MaxLivePerUser > 0 {
		if u := r.live.users[c.UID]; u != nil && len(u.live) >= c.MaxLivePerUser && r.live.count(u.live) >= c.MaxLivePerUser {
			return nil, ipc.TooMany("max_sessions_per_user (%d): this user's %d live sessions are as many as the daemon allows; stop some, or raise max_sessions_per_user in the daemon's config", c.MaxLivePerUser, c.MaxLivePerUser)
		}
	}
	name := c.Name
	switch {
	case name == "":
		name = r.live.freeName(c.UID, c.Base)
	case c.RestartOf == "":
		if s := r.live.holder(c.UID, name); s != nil {
			return nil, ipc.Conflict("the name %q is in use by live session %s: choose another with --name, or stop that one", name, s.ID())
		}
	}
	id := c.ID
	switch {
	case id == "":
		id = r.newID()
	case r.sessions[id] != nil:
		return nil, ipc.Conflict("session id %s is taken", id)
	}
	s := c.New(id, name)
	r.add(s)
	return s, nil
}
