package logkeep

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/daemon/logfile"
)

// TestBatcherGathers: the paths asked for while a batch is on its way go
// in the next one, together; each is sent once, and each caller goes on
// once its path is answered.
func TestBatcherGathers(t *testing.T) {
	b := batcher{window: time.Minute}
	gate := make(chan struct{})
	var mu sync.Mutex
	var batches [][]string
	send := func(paths []string, answered func(int)) {
		mu.Lock()
		first := len(batches) == 0
		batches = append(batches, slices.Clone(paths))
		mu.Unlock()
		if first {
			<-gate
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { b.do("first", send) })
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 }, "the first batch")
	const n = 20
	for i := range n {
		wg.Go(func() { b.do(fmt.Sprint(i), send) })
	}
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == n }, "the paths to queue behind it")
	close(gate)
	wg.Wait()
	if len(batches) != 2 || len(batches[1]) != n {
		t.Fatalf("sent %v: want the first alone, then the %d asked for meanwhile together", batches, n)
	}
	all := slices.Concat(batches...)
	slices.Sort(all)
	if len(slices.Compact(all)) != n+1 {
		t.Fatalf("sent %v: want each of %d paths once", batches, n+1)
	}
	// The last caller goes on as its path is answered, before the
	// batcher's loop finds the queue empty: give the loop its turn.
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return !b.sending && len(b.queue) == 0 }, "the batcher to stop sending with nothing asked for")
}

// TestBatcherAnswersEachPathAsItComes: a caller goes on when its own path
// is answered, not when its batch's last is; and a batch that is never
// answered holds the batches after it back by its window only.
func TestBatcherAnswersEachPathAsItComes(t *testing.T) {
	var b batcher
	stuck := make(chan struct{})
	defer close(stuck)
	send := func(paths []string, answered func(int)) {
		for i, p := range paths {
			if p != "slow" {
				answered(i)
			}
		}
		if slices.Contains(paths, "slow") {
			<-stuck
		}
	}
	slowDone := make(chan struct{})
	go func() { b.do("slow", send); close(slowDone) }()
	time.Sleep(10 * time.Millisecond)
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() { b.do(fmt.Sprint(i), send) })
	}
	wg.Wait()
	if d := time.Since(t0); d > time.Second {
		t.Errorf("ten paths behind a batch never answered took %s", d)
	}
	select {
	case <-slowDone:
		t.Fatal("the unanswered path's caller went on")
	default:
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
	}
}

// TestManyReleasesTogether: fifty sessions that end at once are released
// together, each log with its last line in it and its pipe let go.
func TestManyReleasesTogether(t *testing.T) {
	dir := t.TempDir()
	sock, served := serve(t, dir)
	c, err := Connect(Options{Socket: sock, Executable: "/nonexistent", Diag: filepath.Join(dir, "diag")})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("s%d.log", i))
		out, err := logfile.OpenAppend(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		w, err := c.Attach(paths[i], out, testMax, testKeep)
		out.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(w, "last line of %d\n", i); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() {
			c.Release(p)
			if b, err := os.ReadFile(p); err != nil || string(b) != fmt.Sprintf("last line of %d\n", i) {
				t.Errorf("%s after its release: %q, %v", p, b, err)
			}
			if c.Holds(p) {
				t.Errorf("%s is still held after its release", p)
			}
		})
	}
	wg.Wait()
	c.Close()
	select {
	case <-served:
	case <-time.After(20 * time.Second):
		t.Fatal("the keeper still held logs after every release")
	}
}

// TestReleaseAllOfAnOlderKeeper: a keeper that does not know release-all
// answers with an error; the paths are then left to be released one at a
// time, on a connection that still serves.
func TestReleaseAllOfAnOlderKeeper(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*net.UnixConn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pair")
		nc, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = nc.(*net.UnixConn)
		defer conns[i].Close()
	}
	go func() {
		var req request
		if _, err := receive(conns[1], &req); err == nil {
			_ = send(conns[1], reply{Error: fmt.Sprintf("unknown log keeper request %q", req.Op)})
		}
	}()
	c := &Client{log: zap.NewNop()}
	left := map[string]int{"a": 0, "b": 1}
	var answered []int
	if broken := c.releaseOn(conns[0], []string{"a", "b"}, left, func(i int) { answered = append(answered, i) }); broken {
		t.Error("the connection was taken as broken")
	}
	if len(left) != 2 || len(answered) != 0 {
		t.Errorf("left %v, answered %v: want both left to be released one at a time", left, answered)
	}
}
