package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// serveWith is serve with server options.
func serveWith(t *testing.T, b fake, opt Options) (*ipc.Client, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ipc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	l, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(services(b), func(ipc.Caller) bool { return true }, zap.NewNop(), opt)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	c := &ipc.Client{Socket: sock}
	t.Cleanup(func() { c.Close() })
	return c, sock
}

func TestMetricsOffByDefault(t *testing.T) {
	_, sock := serve(t, &backend{}, nil)
	resp, body := rawRequest(t, sock, "GET", "/v1/metrics", "")
	if resp.StatusCode != 404 || !strings.Contains(body, "metrics are off: set metrics = true") {
		t.Errorf("metrics off: %d %s", resp.StatusCode, body)
	}
}

// observed records what Observe was told.
type observed struct {
	mu   sync.Mutex
	seen []string
}

func (o *observed) observe(route string, status int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, route+" "+http.StatusText(status))
}

func (o *observed) has(s string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.seen {
		if x == s {
			return true
		}
	}
	return false
}

func TestMetricsRouteAndObserve(t *testing.T) {
	obs := &observed{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "sessiond_up 1\n") })
	c, sock := serveWith(t, &backend{sessions: []ipc.Session{{ID: "s1"}}}, Options{Metrics: h, Observe: obs.observe})
	if resp, body := rawRequest(t, sock, "GET", "/v1/metrics", ""); resp.StatusCode != 200 || body != "sessiond_up 1\n" {
		t.Errorf("metrics: %d %q", resp.StatusCode, body)
	}
	rawRequest(t, sock, "GET", "/v1/nope", "")
	rawRequest(t, sock, "GET", "/v1/sessions/zz", "")
	// A stream still flushes through the recorder.
	ls, err := c.Logs(context.Background(), "s1", ipc.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(ls)
	ls.Close()
	if string(b) != "tail=0 follow=true\n" {
		t.Errorf("logs through the recorder = %q", b)
	}
	waitTrue(t, func() bool { return obs.has("GET /v1/sessions/{id}/logs OK") })
	for _, want := range []string{"GET /v1/metrics OK", "unmatched Not Found", "GET /v1/sessions/{id} Not Found"} {
		if !obs.has(want) {
			t.Errorf("observed %v, want %q among them", obs.seen, want)
		}
	}
}

func TestListenMetrics(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "sessiond_up 1\n") })
	ms, err := ListenMetrics("127.0.0.1:0", h, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ms.Serve() }()
	base := "http://" + ms.Addr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/metrics"); code != 200 || body != "sessiond_up 1\n" {
		t.Errorf("GET /v1/metrics over TCP: %d %q", code, body)
	}
	if code, body := get("/v1/sessions"); code != 404 || !strings.Contains(body, "only GET /v1/metrics") {
		t.Errorf("GET /v1/sessions over TCP: %d %q", code, body)
	}
	if _, err := ListenMetrics(ms.Addr().String(), h, zap.NewNop()); err == nil || !strings.Contains(err.Error(), "metrics_listen") {
		t.Errorf("a second listener on the same address: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := ms.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
	if _, err := net.Dial("tcp", ms.Addr().String()); err == nil {
		t.Error("still listening after Shutdown")
	}
}

func waitTrue(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
