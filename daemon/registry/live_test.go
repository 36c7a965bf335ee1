package registry

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

func liveSession(deps *session.Deps, id, name string, uid int, dir string) *session.Session {
	return session.Load(ipc.Session{ID: id, Name: name, State: ipc.StateRunning, UID: uid, ProjectDir: dir, StartedAt: time.Now()}, config.Spec{}, nil, nil, deps)
}

func endedSession(deps *session.Deps, id, name string, uid int, dir string) *session.Session {
	return session.Load(ipc.Session{ID: id, Name: name, State: ipc.StateEnded, UID: uid, ProjectDir: dir, StartedAt: time.Now()}, config.Spec{}, nil, nil, deps)
}

func claim(deps *session.Deps, uid int, dir string) Claim {
	return Claim{UID: uid, Dir: dir, Base: "proj", New: func(id, name string) *session.Session {
		return liveSession(deps, id, name, uid, dir)
	}}
}

func TestRegisterNames(t *testing.T) {
	r := New()
	deps := &session.Deps{Clock: session.RealClock{}, Log: zap.NewNop()}
	var got []string
	for range 4 {
		s, err := r.Register(claim(deps, 1000, "/p"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s.Name())
	}
	if want := []string{"proj", "proj-2", "proj-3", "proj-4"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	// Another user's names are theirs.
	if s, err := r.Register(claim(deps, 1001, "/q")); err != nil || s.Name() != "proj" {
		t.Fatalf("another user's first name = %v, %v; want proj", s, err)
	}
	// A freed name is given again, lowest first.
	s2 := r.NameHolder(1000, "proj-2")
	r.Remove(s2.ID())
	if s, err := r.Register(claim(deps, 1000, "/p")); err != nil || s.Name() != "proj-2" {
		t.Fatalf("after proj-2 went: %v, %v; want proj-2", s, err)
	}
	if s, err := r.Register(claim(deps, 1000, "/p")); err != nil || s.Name() != "proj-5" {
		t.Fatalf("next: %v, %v; want proj-5", s, err)
	}
	// A name asked for that a live session holds is refused.
	c := claim(deps, 1000, "/p")
	c.Name = "proj-3"
	if _, err := r.Register(c); !errors.Is(err, ipc.ErrConflict) {
		t.Fatalf("a held name: %v, want conflict", err)
	}
}

func TestRegisterLimits(t *testing.T) {
	r := New()
	deps := &session.Deps{Clock: session.RealClock{}, Log: zap.NewNop()}
	c := claim(deps, 1000, "/p")
	c.Exclusive = true
	if _, err := r.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(c); !errors.Is(err, ipc.ErrConflict) {
		t.Fatalf("a second live session of a project that is not concurrent: %v, want conflict", err)
	}
	c = claim(deps, 1000, "/q")
	c.MaxLivePerUser = 2
	if _, err := r.Register(c); err != nil {
		t.Fatal(err)
	}
	_, err := r.Register(c)
	if !errors.Is(err, ipc.ErrTooMany) {
		t.Fatalf("past max_sessions_per_user: %v, want too_many_requests", err)
	}
	// Another user is not bound by the first one's sessions.
	c2 := claim(deps, 1001, "/q")
	c2.MaxLivePerUser = 2
	if _, err := r.Register(c2); err != nil {
		t.Fatalf("another user: %v", err)
	}
	c.MaxLive = 3
	c2.MaxLive = 3
	if _, err := r.Register(c2); !errors.Is(err, ipc.ErrConflict) {
		t.Fatalf("past max_sessions: %v, want conflict", err)
	}
}

// TestFreeNameScale: names for one user's thousands of sessions of one
// project cost what the first did.
func TestFreeNameScale(t *testing.T) {
	r := New()
	deps := &session.Deps{Clock: session.RealClock{}, Log: zap.NewNop()}
	for i := range 20000 {
		r.Add(liveSession(deps, fmt.Sprintf("a%07d", i), nameAt("proj", i+1), 1000, "/p"))
	}
	for i := range 1000 {
		r.Add(endedSession(deps, fmt.Sprintf("e%07d", i), "proj", 1000, "/p"))
	}
	s, err := r.Register(claim(deps, 1000, "/p"))
	if err != nil || s.Name() != "proj-20001" {
		t.Fatalf("name after 20000 = %v, %v", s, err)
	}
}

func nameAt(base string, n int) string {
	if n == 1 {
		return base
	}
	return fmt.Sprintf("%s-%d", base, n)
}

func BenchmarkRegisterBesideManySessions(b *testing.B) {
	r := New()
	deps := &session.Deps{Clock: session.RealClock{}, Log: zap.NewNop()}
	for i := range 6000 {
		r.Add(liveSession(deps, fmt.Sprintf("a%07d", i), nameAt("proj", i+1), 1000, "/p"))
	}
	b.ResetTimer()
	for range b.N {
		s, err := r.Register(claim(deps, 1001, "/q"))
		if err != nil {
			b.Fatal(err)
		}
		r.Remove(s.ID())
	}
}

func BenchmarkRegisterAmongOwnSessions(b *testing.B) {
	r := New()
	deps := &session.Deps{Clock: session.RealClock{}, Log: zap.NewNop()}
	for i := range 6000 {
		r.Add(liveSession(deps, fmt.Sprintf("a%07d", i), nameAt("proj", i+1), 1000, "/p"))
	}
	b.ResetTimer()
	for range b.N {
		s, err := r.Register(claim(deps, 1000, "/p"))
		if err != nil {
			b.Fatal(err)
		}
		r.Remove(s.ID())
	}
}
