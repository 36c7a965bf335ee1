package session

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// keeperOutput stands in for the log keeper: each command's output is a
// pipe whose read end the test holds. It tells the test when it is asked
// for an output (asked, made when called) and which logs it let go.
type keeperOutput struct {
	output
	asked string
	mu    sync.Mutex
	reads map[string]*os.File
	done  []string
}

func (k *keeperOutput) Output(path string, _ *os.File) *os.File {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	k.mu.Lock()
	k.reads[path] = r
	k.mu.Unlock()
	if err := os.WriteFile(k.asked, nil, 0o600); err != nil {
		panic(err)
	}
	return w
}

func (k *keeperOutput) Done(path string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = append(k.done, path)
}

func (k *keeperOutput) released() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.done...)
}

// readEnd is the read end of the pipe given for the log at path.
func (k *keeperOutput) readEnd(t *testing.T, path string) *os.File {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	r := k.reads[path]
	if r == nil {
		t.Fatalf("no output was asked for %s", path)
	}
	return r
}

// closedWithin reports whether every write end of r is closed: a read
// sees the end of the pipe within d.
func closedWithin(t *testing.T, r *os.File, d time.Duration) bool {
	t.Helper()
	_ = r.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadAll(r)
	return err == nil
}

func newKeeperRig(t *testing.T) (*rig, *keeperOutput) {
	r := newRig(t)
	k := &keeperOutput{asked: filepath.Join(t.TempDir(), "asked"), reads: map[string]*os.File{}}
	r.deps.Output = k
	t.Cleanup(func() {
		for _, f := range k.reads {
			f.Close()
		}
	})
	return r, k
}

// TestTheKeeperIsAskedWhileTheStartGoesOn: the command's output is asked
// of the log keeper while the start's other steps go on, not after them.
// The preflight here runs only once the keeper has been asked (it waits
// for the file the fake keeper writes when it is), which a start that
// asks after its preflight never lets it see.
func TestTheKeeperIsAskedWhileTheStartGoesOn(t *testing.T) {
	r, k := newKeeperRig(t)
	spec := testSpec("sleep", "100")
	spec.Preflight = []string{"i=0; while [ ! -e '" + k.asked + "' ]; do i=$((i+1)); [ $i -gt 500 ] && exit 1; sleep 0.01; done"}
	s := r.start(t, spec)
	if got := k.released(); len(got) != 0 {
		t.Errorf("the keeper let go of %v while the command runs", got)
	}
	// The command holds the pipe's write end; the daemon has let go of its own.
	read := k.readEnd(t, s.logPath())
	if closedWithin(t, read, 200*time.Millisecond) {
		t.Fatal("the output pipe is closed while the command runs")
	}
	if err := s.Stop(context.Background(), Interrupted, 0); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	<-r.ended
	if !closedWithin(t, read, 10*time.Second) {
		t.Error("the output pipe is still open after the command ended: the daemon holds a write end")
	}
	if got := k.released(); len(got) != 1 || got[0] != s.logPath() {
		t.Errorf("released %v, want the session's log once", got)
	}
}

// TestAFailedStartLetsTheKeeperGo: a start that fails after the keeper
// was asked (its preflight here) closes the pipe's write end and lets the
// keeper's end go, once.
func TestAFailedStartLetsTheKeeperGo(t *testing.T) {
	r, k := newKeeperRig(t)
	spec := testSpec("sleep", "100")
	spec.Preflight = []string{"exit 3"}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := New(Params{ID: "failedstart", UID: os.Geteuid(), Project: openProject(t, dir), Spec: spec}, &r.deps)
	s.Start()
	<-s.Started()
	if err := s.TakeStartInfo().Err; err == nil {
		t.Fatal("the start did not fail")
	}
	<-s.Done()
	<-r.ended
	if !closedWithin(t, k.readEnd(t, s.logPath()), 10*time.Second) {
		t.Error("the output pipe is still open after a failed start")
	}
	if got := k.released(); len(got) != 1 || got[0] != s.logPath() {
		t.Errorf("released %v, want the session's log once", got)
	}
}
