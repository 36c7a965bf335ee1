package e2e

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// webDaemon is a daemon with its web listener on, and what its log said
// of it: the URL and the certificate's fingerprint.
type webDaemon struct {
	*daemon
	url, fingerprint string
	client           *http.Client
}

func startWebDaemon(t *testing.T, extra string) *webDaemon {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "sdweb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), filepath.Join(sockDir, "s.sock"), extra+"[defaults]\ncheckpoint = \"\"\n")
	w := &webDaemon{daemon: d}
	waitFor(t, 10*time.Second, "the web listener in the log", func() (bool, string) {
		b, _ := os.ReadFile(d.logPath)
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "serving the web API") {
				continue
			}
			var v struct {
				URL         string `json:"url"`
				Fingerprint string `json:"certificate_sha256"`
			}
			if json.Unmarshal([]byte(line), &v) == nil && v.URL != "" {
				w.url, w.fingerprint = strings.TrimSuffix(v.URL, "/"), v.Fingerprint
				return true, ""
			}
		}
		return false, string(b)
	})
	w.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		// The daemon's own certificate, pinned by its fingerprint.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
			got := strings.ToUpper(hex.EncodeToString(sum[:]))
			if want := strings.ReplaceAll(w.fingerprint, ":", ""); got != want {
				return fmt.Errorf("certificate %s, pinned %s", got, want)
			}
			return nil
		},
	}}}
	return w
}

// token makes a token with sessiond token create.
func (w *webDaemon) token(t *testing.T, args ...string) string {
	t.Helper()
	r := execute(t, cleanEnv(), sessiondBin, append([]string{"token", "create", "--state-dir", w.stateDir}, args...)...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sdt_") {
		t.Fatalf("token create: %s", r)
	}
	return strings.TrimSpace(r.stdout)
}

// do sends a request with token (none for "") and returns the status and
// body.
func (w *webDaemon) do(t *testing.T, method, path, token, body string, header ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, w.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := w.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWebListener: the opt-in listener serves the API over TLS (its own
// certificate, pinned), to tokens only: a read token reads, a control token
// acts, each as its user with that user's rights; revoked tokens and other
// origins are refused, failed authentications are rate-limited and logged,
// and the security headers are on every answer.
func TestWebListener(t *testing.T) {
	u := newUser(t)
	w := startWebDaemon(t, fmt.Sprintf("allowed_groups = [%q]\n[web]\nlisten = \"127.0.0.1:0\"\ntls = true\n", u.group))
	if !strings.HasPrefix(w.url, "https://") || w.fingerprint == "" {
		t.Fatalf("the listener: %s, fingerprint %q", w.url, w.fingerprint)
	}
	// Plain HTTP to the TLS port is no way in.
	if resp, err := http.Get("http://" + strings.TrimPrefix(w.url, "https://") + "/v1/version"); err == nil {
		if resp.StatusCode == 200 {
			t.Error("plain HTTP to the TLS listener answered 200")
		}
		resp.Body.Close()
	}

	if code, body := w.do(t, "GET", "/v1/sessions", "", ""); code != 401 || !strings.Contains(body, "token") {
		t.Errorf("no token: %d %s", code, body)
	}
	read := w.token(t, "--user", u.name, "--scope", "read", "--name", "phone")
	control := w.token(t, "--user", u.name, "--scope", "control", "--expires", "30d")

	// The user's own session, and root's, which the user may not see.
	dir := u.project(t)
	r := u.ctl(t, w.sock, "start", "-q", dir, "--", "sleep", "60")
	mine := strings.TrimSpace(r.stdout)
	roots := w.start(project(t), "--", "sleep", "60")
	code, body := w.do(t, "GET", "/v1/sessions", read, "")
	if code != 200 || !strings.Contains(body, mine) || strings.Contains(body, roots) {
		t.Errorf("GET /v1/sessions with the user's read token: %d, want the user's session (%s) and not root's (%s):\n%s", code, mine, roots, body)
	}
	resp, err := w.client.Get(w.url + "/v1/version")
	if err == nil {
		for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Strict-Transport-Security"} {
			if resp.Header.Get(h) == "" {
				t.Errorf("no %s header", h)
			}
		}
		resp.Body.Close()
	}
	if code, body := w.do(t, "POST", "/v1/sessions/"+mine+"/stop", read, "{}"); code != 403 || !strings.Contains(body, "control token") {
		t.Errorf("stop with a read token: %d %s", code, body)
	}
	if code, body := w.do(t, "POST", "/v1/sessions/"+roots+"/stop", control, "{}"); code != 404 && code != 403 {
		t.Errorf("stop of root's session with the user's control token: %d %s", code, body)
	}
	if code, body := w.do(t, "POST", "/v1/sessions/"+mine+"/stop", control, `{"grace":"1s"}`); code != 200 || !strings.Contains(body, `"state": "ended"`) && !strings.Contains(body, `"state":"ended"`) {
		t.Errorf("stop with a control token: %d %s", code, body)
	}
	if code, _ := w.do(t, "GET", "/v1/sessions", control, "", "Origin", "https://evil.example"); code != 403 {
		t.Errorf("a request from another origin: %d, want 403", code)
	}
	if code, _ := w.do(t, "GET", "/v1/openapi.json", read, ""); code != 200 {
		t.Errorf("GET /v1/openapi.json: %d", code)
	}

	// Revoked: refused within the second the daemon keeps its list.
	ls := execute(t, cleanEnv(), sessiondBin, "token", "ls", "--state-dir", w.stateDir)
	// sdt_ID_SECRET, the secret URL-safe base64 that may hold "_" itself.
	if !strings.Contains(ls.stdout, "phone") || strings.Contains(ls.stdout, strings.SplitN(read, "_", 3)[2]) {
		t.Errorf("token ls:\n%s", ls)
	}
	id := strings.Split(read, "_")[1]
	if r := execute(t, cleanEnv(), sessiondBin, "token", "revoke", "--state-dir", w.stateDir, id); r.code != 0 {
		t.Fatal(r)
	}
	waitFor(t, 5*time.Second, "the revoked token to be refused", func() (bool, string) {
		code, _ := w.do(t, "GET", "/v1/sessions", read, "")
		return code == 401, fmt.Sprint(code)
	})

	// Failed authentications: counted per address, then 429, and logged.
	var last int
	for range 12 {
		last, _ = w.do(t, "GET", "/v1/sessions", "sdt_00000000_wrong", "")
	}
	if last != 429 {
		t.Errorf("after 12 failed authentications: %d, want 429", last)
	}
	if b, _ := os.ReadFile(w.logPath); !strings.Contains(string(b), "authentication failed") {
		t.Error("failed authentications are not logged")
	}
	w.mustCtl("stop", roots)
}

// TestWebTokensAreRootsToGive: a user may make tokens for no one else.
func TestWebTokensAreRootsToGive(t *testing.T) {
	u := newUser(t)
	state := t.TempDir()
	cmd := exec.Command(sessiondBin, "token", "create", "--state-dir", state, "--user", "root")
	cmd.SysProcAttr = credentialOf(u)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "only root makes tokens for other users") {
		t.Errorf("a user's token for root: %v\n%s", err, out)
	}
}

// credentialOf runs a command as the throwaway user.
func credentialOf(u tuser) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
}

// TestWebAdversarial: ten thousand wrong tokens are answered 429 past the
// first few and do not slow the socket; the listener's connections count
// under the daemon's caps, so that a flood of them leaves the socket's
// callers their place.
func TestWebAdversarial(t *testing.T) {
	w := startWebDaemon(t, "max_connections_per_user = 8\n[web]\nlisten = \"127.0.0.1:0\"\n")
	psTime := func(n int) time.Duration {
		var times []time.Duration
		for range n {
			start := time.Now()
			w.mustCtl("ps")
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		return times[len(times)/2]
	}
	before := psTime(10)

	var codes sync.Map
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var during time.Duration
	go func() {
		during = psTime(20)
		close(stop)
	}()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8, MaxConnsPerHost: 8}}
	jobs := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				req, _ := http.NewRequest("GET", w.url+"/v1/sessions", nil)
				req.Header.Set("Authorization", "Bearer sdt_00000000_guess")
				resp, err := client.Do(req)
				if err != nil {
					codes.Store("error", true)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n, _ := codes.LoadOrStore(resp.StatusCode, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		}()
	}
	for i := range 10000 {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	<-stop
	count := func(code int) int64 {
		if n, ok := codes.Load(code); ok {
			return n.(*atomic.Int64).Load()
		}
		return 0
	}
	if count(401) > 10 || count(429) < 9990 || count(200) != 0 {
		t.Errorf("10000 wrong tokens: %d 401, %d 429, %d 200", count(401), count(429), count(200))
	}
	if during > 3*before+100*time.Millisecond {
		t.Errorf("sessionctl ps took %s (median) during the flood, %s before it", during, before)
	}
	t.Logf("sessionctl ps median %s before, %s during 10000 wrong tokens", before, during)

	// Twenty connections held open to the listener: eight are let in (the
	// per-user cap its connections count under), the rest closed at once;
	// the socket answers all the same.
	var conns []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", strings.TrimPrefix(w.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	closed := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
		c.Close()
	}
	if closed < 12 {
		t.Errorf("%d of 20 held connections were closed, want the 12 past the cap of 8", closed)
	}
	w.mustCtl("ps")
}
