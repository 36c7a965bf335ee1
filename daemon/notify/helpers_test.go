package notify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/proc"
)

// TestMain makes the test process what the daemon is: a child subreaper
// whose reaper reaps every child on SIGCHLD, so that the commands' exit
// statuses are seen to survive it.
func TestMain(m *testing.M) {
	if err := proc.EnableSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "subreaper:", err)
		os.Exit(1)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c, err := proc.Spawn(proc.Spec{Argv: []string{"true"}, Dir: "/", Env: os.Environ(), Output: devnull})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the reaper:", err)
		os.Exit(1)
	}
	<-c.Done()
	devnull.Close()
	goleak.VerifyTestMain(m,
		// The reaper lives as long as the process, as children do.
		goleak.IgnoreTopFunction("github.com/sessiond/sessiond/daemon/proc.reapLoop"),
		goleak.IgnoreTopFunction("github.com/sessiond/sessiond/daemon/proc.(*spawner).serve"),
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.IgnoreAnyFunction("os/signal.loop"),
	)
}

// newNotifier returns a Notifier with fast retries, closed at the end of the
// test, and its observed logs.
func newNotifier(t *testing.T, rules []config.NotifyRule, opt Options) (*Notifier, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	opt.Logger = zap.New(core)
	if opt.RetryBackoff == 0 {
		opt.RetryBackoff = 10 * time.Millisecond
	}
	if opt.Host == "" {
		opt.Host = "testhost"
	}
	n, err := New(rules, opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n, logs
}

// hit is one request a hookServer received.
type hit struct {
	header http.Header
	body   []byte
}

// hookServer is a local webhook receiver. Each request is answered by the
// next of its statuses (the last one repeats); status 0 hangs until the
// client gives up or the test ends.
type hookServer struct {
	*httptest.Server
	hits chan hit

	mu       sync.Mutex
	statuses []int
	count    int
	release  chan struct{}
}

func newHookServer(t testing.TB, statuses ...int) *hookServer {
	t.Helper()
	if len(statuses) == 0 {
		statuses = []int{http.StatusOK}
	}
	s := &hookServer{hits: make(chan hit, 1000), statuses: statuses, release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.release)
		s.Close()
	})
	return s
}

func (s *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	status := s.statuses[min(s.count, len(s.statuses)-1)]
	s.count++
	s.mu.Unlock()
	s.hits <- hit{header: r.Header.Clone(), body: body}
	if status == 0 {
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	}
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(status)
	// Echo the secret, as a careless server might, to see it scrubbed.
	fmt.Fprintf(w, "status %d, you sent %s", status, r.Header.Get("Authorization"))
}

// requests returns how many requests the server received.
func (s *hookServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// next waits for the next request.
func (s *hookServer) next(t *testing.T, within time.Duration) hit {
	t.Helper()
	select {
	case h := <-s.hits:
		return h
	case <-time.After(within):
		t.Fatalf("no webhook request within %s", within)
		return hit{}
	}
}

// none asserts that no request arrives for a while.
func (s *hookServer) none(t *testing.T, during time.Duration) {
	t.Helper()
	select {
	case h := <-s.hits:
		t.Fatalf("unexpected webhook request: %s", h.body)
	case <-time.After(during):
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// endedEvent is an ended event of session id.
func endedEvent(id, reason string) Event {
	code := 1
	return Event{Type: config.NotifyEnded, SessionID: id, Name: "s-" + id, EndReason: reason, ExitCode: &code,
		Message: "ended: " + reason}
}

// throwawayUser creates a system user for the test (the test must run as
// root) with a home of its own, removed at the end of the test.
func throwawayUser(t *testing.T) *Owner {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a user to run as needs root; this test checks that commands run as the session's user")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd is not installed")
	}
	base, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	name := "sdn" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	home := filepath.Join(base, name)
	if out, err := helper("useradd", "--home-dir", home, "--create-home", "--user-group",
		"--shell", "/bin/sh", name); err != nil {
		os.RemoveAll(base)
		t.Fatalf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := helper("userdel", "--remove", name); err != nil {
			t.Errorf("userdel: %v: %s", err, out)
		}
		os.RemoveAll(base)
	})
	out, err := helper("id", "-u", name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	o, err := LookupOwner(uid)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// helper runs a command the test needs through proc.Run, as the daemon's
// own helpers do: the reaper started in TestMain would otherwise take its
// exit status. It returns the combined output.
func helper(argv ...string) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := proc.Run(cmd)
	return out.Bytes(), err
}

// selfOwner is the test process's own user as a session owner.
func selfOwner(t *testing.T) *Owner {
	t.Helper()
	o, err := LookupOwner(os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	return o
}
