package session

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/cgroup"
)

// tidyings is a Deferrer that keeps what is tidied for the test to run,
// and notes whether the session's end was known when it was queued.
type tidyings struct {
	mu      sync.Mutex
	s       *Session
	queued  []func()
	endSeen []bool
}

func (d *tidyings) Do(f func()) { f() }

func (d *tidyings) Tidy(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := false
	if d.s != nil {
		select {
		case <-d.s.Done():
			seen = true
		default:
		}
	}
	d.queued = append(d.queued, f)
	d.endSeen = append(d.endSeen, seen)
}

// TestCgroupRemovalQueuedBeforeTheEndIsKnown: an ended session's cgroup
// is left to the deferred queue before anyone can learn of the end. A
// daemon that shuts down once its sessions have ended runs what is queued
// and then removes its own cgroup: a removal queued after the end was
// known could come after that, and the daemon's cgroup stayed behind.
func TestCgroupRemovalQueuedBeforeTheEndIsKnown(t *testing.T) {
	host := cgroup.Detect(cgroup.Options{Name: fmt.Sprintf("sessiond-test-%d-%d", os.Getpid(), time.Now().UnixNano())})
	if !host.Enabled() {
		// Root with a cgroup v2 hierarchy mounted can always make one
		// (CI's machines): there a daemon without one is a failure.
		if v2, _ := cgroup.Hierarchies(); v2 != "" && os.Geteuid() == 0 {
			t.Fatalf("root has a cgroup v2 hierarchy at %s, yet no cgroup for sessions: %s", v2, host.Info().Why)
		}
		t.Skipf("no cgroup for sessions on this host: %s", host.Info().Why)
	}
	base := host.Info().Path
	later := &tidyings{}
	r := newRig(t)
	r.deps.Cgroups, r.deps.Later = host, later
	t.Cleanup(func() {
		host.Sweep(context.Background(), func(string) bool { return false })
		host.Close()
	})

	s := r.start(t, testSpec("sleep", "100"))
	later.mu.Lock()
	later.s = s
	later.mu.Unlock()
	if s.Snapshot().Cgroup == nil {
		t.Fatal("the session has no cgroup")
	}
	if err := s.Stop(context.Background(), Interrupted, -1); err != nil {
		t.Fatal(err)
	}
	<-r.ended

	later.mu.Lock()
	queued, endSeen := later.queued, later.endSeen
	later.mu.Unlock()
	if len(queued) != 1 || endSeen[0] {
		t.Fatalf("tidyings queued %d, the end known when queued %v: want the cgroup's removal, queued before the end was known", len(queued), endSeen)
	}
	queued[0]()
	host.Close()
	if _, err := os.Stat(base); err == nil {
		t.Errorf("the host's cgroup %s stayed after the session's removal and the host's close", base)
	}
}
