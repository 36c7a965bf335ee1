package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProfilesOnlyInAProfilingBuild: Go's profiles are served on the socket
// only by a daemon built with the pprof tag and run with SESSIOND_PPROF=1;
// the default build says in its log that it has none, and answers 404.
func TestProfilesOnlyInAProfilingBuild(t *testing.T) {
	dir := t.TempDir()
	profiling := filepath.Join(dir, "sessiond")
	build := exec.Command("go", "build", "-tags", "pprof", "-o", profiling, "./cmd/sessiond")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags pprof: %v\n%s", err, out)
	}

	get := func(d *daemon, path string) (int, string) {
		t.Helper()
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
			},
		}}
		defer c.CloseIdleConnections()
		resp, err := c.Get("http://sessiond" + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: read the body: %v", path, err)
		}
		return resp.StatusCode, string(body)
	}
	on := []string{"SESSIOND_PPROF=1"}

	d := startBuild(t, profiling, on, filepath.Join(t.TempDir(), "state"), newSocketPath(t), "")
	if code, body := get(d, "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("a profiling build with SESSIOND_PPROF=1: /debug/pprof/ answered %d:\n%.500s", code, body)
	}
	if code, body := get(d, "/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "# HeapAlloc = ") {
		t.Errorf("/debug/pprof/heap?debug=1 answered %d:\n%.500s", code, body)
	}
	if code, body := get(d, "/debug/pprof/symbol"); code != http.StatusOK || !strings.Contains(body, "num_symbols") {
		t.Errorf("/debug/pprof/symbol answered %d:\n%.500s", code, body)
	}
	d.stop()

	d = startBuild(t, profiling, nil, filepath.Join(t.TempDir(), "state"), newSocketPath(t), "")
	if code, body := get(d, "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("a profiling build without SESSIOND_PPROF: /debug/pprof/ answered %d, want 404:\n%.500s", code, body)
	}
	d.stop()

	d = startBuild(t, sessiondBin, on, filepath.Join(t.TempDir(), "state"), newSocketPath(t), "")
	if code, body := get(d, "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("the default build with SESSIOND_PPROF=1: /debug/pprof/ answered %d, want 404:\n%.500s", code, body)
	}
	d.stop()
	if log, _ := os.ReadFile(d.logPath); !strings.Contains(string(log), "built without profiles") || !strings.Contains(string(log), "TAGS=pprof") {
		t.Errorf("the default build with SESSIOND_PPROF=1 does not say it has no profiles:\n%s", log)
	}
}
