package notify

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/config"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func intp(n int) *int { return &n }

// goldenEvent is a fixed event, so that payloads compare byte for byte.
func goldenEvent() Event {
	code := 2
	return Event{
		Type: config.NotifyEnded, Time: time.Date(2025, 3, 14, 15, 9, 26, 535000000, time.UTC),
		SessionID: "k3xq9a", Name: "nightly-refactor", ProjectDir: "/home/dev/src/api", ProjectID: "4f1c2a9b7d3e",
		EndReason: "error", ExitCode: &code, HandoffFile: "/home/dev/src/api/.sessiond/handoff.json",
		Message: "ended: error (exit 2) after 2h13m",
	}
}

// TestWebhookGolden compares what each template sends with the golden
// files under testdata (go test -update rewrites them).
func TestWebhookGolden(t *testing.T) {
	for _, tmpl := range []string{"json", "slack", "ntfy"} {
		t.Run(tmpl, func(t *testing.T) {
			srv := newHookServer(t)
			rule := config.NotifyRule{Name: "ci", On: []string{"ended:error"}, Webhook: srv.URL + "/hook", Template: tmpl}
			n, _ := newNotifier(t, nil, Options{Host: "buildhost"})
			if err := n.Test(context.Background(), rule, FromDaemon, goldenEvent()); err != nil {
				t.Fatalf("Test: %v", err)
			}
			h := srv.next(t, 5*time.Second)
			var got bytes.Buffer
			for _, k := range []string{"Content-Type", "User-Agent", "Sessiond-Event", "Sessiond-Delivery", "Title", "Priority", "Tags"} {
				if v := h.header.Get(k); v != "" {
					fmt.Fprintf(&got, "%s: %s\n", k, v)
				}
			}
			got.WriteString("\n")
			got.Write(h.body)
			golden := filepath.Join("testdata", "webhook-"+tmpl+".golden")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("request differs from %s (go test -update rewrites it)\n got:\n%s\nwant:\n%s", golden, got.Bytes(), want)
			}
		})
	}
}

func TestWebhookRetriesAfter500(t *testing.T) {
	srv := newHookServer(t, 500, 503, 200)
	rule := config.NotifyRule{On: []string{"ended"}, Webhook: srv.URL, Retries: intp(3)}
	n, _ := newNotifier(t, nil, Options{})
	if err := n.Test(context.Background(), rule, FromDaemon, Event{}); err != nil {
		t.Fatalf("Test: %v", err)
	}
	if got := srv.requests(); got != 3 {
		t.Errorf("requests = %d, want 3 (two 5xx, then 200)", got)
	}
	var ids []string
	for range 3 {
		ids = append(ids, srv.next(t, time.Second).header.Get("Sessiond-Delivery"))
	}
	if ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("delivery ids of the retries = %q, want one id repeated", ids)
	}
}

func TestWebhookRetries429(t *testing.T) {
	srv := newHookServer(t, 429, 200)
	rule := config.NotifyRule{On: []string{"ended"}, Webhook: srv.URL}
	n, _ := newNotifier(t, nil, Options{})
	if err := n.Test(context.Background(), rule, FromDaemon, Event{}); err != nil {
		t.Fatalf("Test: %v", err)
	}
	if got := srv.requests(); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
}

func TestWebhookGivesUp(t *testing.T) {
	srv := newHookServer(t, 500)
	rule := config.NotifyRule{On: []string{"ended"}, Webhook: srv.URL + "/services/SECRETPATH", Retries: intp(2)}
	n, _ := newNotifier(t, nil, Options{})
	err := n.Test(context.Background(), rule, FromDaemon, Event{})
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") || !strings.Contains(err.Error(), "500 Internal Server Error") {
		t.Fatalf("Test = %v, want gave up after 3 attempts with the 500", err)
	}
	if strings.Contains(err.Error(), "SECRETPATH") {
		t.Errorf("error %q shows the URL's path", err)
	}
	if got := srv.requests(); got != 3 {
		t.Errorf("requests = %d, want 3 (1 + 2 retries)", got)
	}
}

func TestWebhookNoRetryOn4xx(t *testing.T) {
	for _, status := range []int{400, 401, 404, 410} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := newHookServer(t, status)
			rule := config.NotifyRule{On: []string{"ended"}, Webhook: srv.URL, Retries: intp(5)}
			n, _ := newNotifier(t, nil, Options{})
			err := n.Test(context.Background(), rule, FromDaemon, Event{})
			if err == nil || !strings.Contains(err.Error(), "not retried") || !strings.Contains(err.Error(), fmt.Sprint(status)) {
				t.Fatalf("Test = %v, want %d not retried", err, status)
			}
			if got := srv.requests(); got != 1 {
				t.Errorf("requests = %d, want 1", got)
			}
		})
	}
}

func TestWebhookRedirectNotFollowed(t *testing.T) {
	target := newHookServer(t)
	redirect := http.NewServeMux()
	redirect.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusTemporaryRedirect)
	})
	srv := httptest.NewServer(redirect)
	t.Cleanup(srv.Close)
	rule := config.NotifyRule{On: []string{"ended"}, Webhook: srv.URL, SecretEnv: "SESSIOND_TEST_REDIRECT_SECRET"}
	t.Setenv("SESSIOND_TEST_REDIRECT_SECRET", "Bearer s3cret")
	n, _ := newNotifier(t, nil, Options{})
	err := n.Test(context.Background(), rule, FromDaemon, Event{})
	if err == nil || !strings.Contains(err.Error(), "redirects are not followed") {
		t.Fatalf("Test = %v, want a redirect error", err)
	}
	target.none(t, 100*time.Millisecond)
}

func TestWebhookTimeoutAfterHang(t *testing.T) {
	srv := newHookServer(t, 0, 0)
	rule := config.NotifyRule{On: []string{"ended"}, Webhook: srv.URL, Timeout: config.Duration{Duration: 200 * time.Millisecond}, Retries: intp(1)}
	n, _ := newNotifier(t, nil, Options{})
	start := time.Now()
	err := n.Test(context.Background(), rule, FromDaemon, Event{})
	if err == nil || !strings.Contains(err.Error(), "no response within 200ms") || !strings.Contains(err.Error(), "gave up after 2 attempts") {
		t.Fatalf("Test = %v, want no response within 200ms, twice", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Test took %s; the timeout is 200ms per attempt", took)
	}
	if got := srv.requests(); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
}

// TestWebhookSecret: the secret header reaches the server, read from the
// file at send time, and appears in no log and no error even when the
// server echoes it back.
func TestWebhookSecret(t *testing.T) {
	const secret = "Bearer tk_9f8e7d6c5b4a"
	srv := newHookServer(t, 200, 500)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("Bearer old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rule := config.NotifyRule{Name: "phone", On: []string{"ended"}, Webhook: srv.URL + "/topic-SECRETTOPIC",
		Template: "ntfy", SecretFile: file, Retries: intp(1)}
	n, logs := newNotifier(t, []config.NotifyRule{rule}, Options{})

	// Changed after the rule was loaded: the secret is read at send time.
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Publish(endedEvent("a1", "error"), nil)
	if got := srv.next(t, 5*time.Second).header.Get("Authorization"); got != secret {
		t.Errorf("Authorization = %q, want the secret from the file", got)
	}
	// The second delivery fails (500, echoing the secret), and is logged.
	n.Publish(endedEvent("a2", "error"), nil)
	waitFor(t, 5*time.Second, "the failure", func() bool { return n.Stats().Failed == 1 })
	if s := n.Stats(); s.Sent != 1 {
		t.Errorf("stats = %+v, want 1 sent, 1 failed", s)
	}
	failures := logs.FilterMessage("notification failed").All()
	if len(failures) != 1 {
		t.Fatalf("logged %d failures, want 1", len(failures))
	}
	for _, e := range logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, "tk_9f8e7d6c5b4a") {
			t.Errorf("log line shows the secret: %s", line)
		}
		if strings.Contains(line, "SECRETTOPIC") {
			t.Errorf("log line shows the URL's path: %s", line)
		}
	}
	// What the server answered is never quoted: the status alone.
	if errText := fmt.Sprint(failures[0].ContextMap()["error"]); !strings.HasSuffix(errText, "500 Internal Server Error") {
		t.Errorf("logged error %q: want the status, without the server's answer", errText)
	}
}

func TestWebhookSecretEnv(t *testing.T) {
	srv := newHookServer(t)
	t.Setenv("SESSIOND_TEST_TOKEN", "abc123")
	rule := config.NotifyRule{On: []string{"ended"}, Webhook: srv.URL, SecretHeader: "X-Api-Key", SecretEnv: "SESSIOND_TEST_TOKEN"}
	n, _ := newNotifier(t, nil, Options{})
	if err := n.Test(context.Background(), rule, FromDaemon, Event{}); err != nil {
		t.Fatalf("Test: %v", err)
	}
	if got := srv.next(t, time.Second).header.Get("X-Api-Key"); got != "abc123" {
		t.Errorf("X-Api-Key = %q, want abc123", got)
	}
	// A project's rule reads its variable from the session's environment.
	ev := SampleEvent()
	ev.Env = []string{"SESSIOND_TEST_TOKEN=from-session"}
	if err := n.Test(context.Background(), rule, FromProject, ev); err != nil {
		t.Fatalf("Test: %v", err)
	}
	if got := srv.next(t, time.Second).header.Get("X-Api-Key"); got != "from-session" {
		t.Errorf("X-Api-Key = %q, want the session's value", got)
	}
}

func TestWebhookSecretErrors(t *testing.T) {
	srv := newHookServer(t)
	dir := t.TempDir()
	twoLines := filepath.Join(dir, "two")
	os.WriteFile(twoLines, []byte("Bearer a\nBearer b\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	tests := []struct {
		name string
		rule config.NotifyRule
		want string
	}{
		{"missing file", config.NotifyRule{SecretFile: filepath.Join(dir, "nope")}, "no such file"},
		{"directory", config.NotifyRule{SecretFile: dir}, "not a regular file"},
		{"two lines", config.NotifyRule{SecretFile: twoLines}, "more than one line"},
		{"empty", config.NotifyRule{SecretFile: empty}, "is empty"},
		{"unset env", config.NotifyRule{SecretEnv: "SESSIOND_TEST_UNSET_VAR"}, "SESSIOND_TEST_UNSET_VAR is not set"},
	}
	n, _ := newNotifier(t, nil, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rule.On, tt.rule.Webhook = []string{"ended"}, srv.URL
			err := n.Test(context.Background(), tt.rule, FromDaemon, Event{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Test = %v, want %q", err, tt.want)
			}
		})
	}
	if got := srv.requests(); got != 0 {
		t.Errorf("requests = %d, want none sent without the secret", got)
	}
}

// TestWebhookProjectSecretAsUser: under a root daemon a project's rule
// reads its secret file as the session's user, so a file only root may
// read is refused, and the daemon's environment is not the project's.
func TestWebhookProjectSecretAsUser(t *testing.T) {
	owner := throwawayUser(t)
	srv := newHookServer(t)
	rootOnly := filepath.Join(t.TempDir(), "root-token")
	if err := os.WriteFile(rootOnly, []byte("Bearer root-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(owner.Home, "token")
	if err := os.WriteFile(theirs, []byte("Bearer users-own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, owner.UID, owner.GID); err != nil {
		t.Fatal(err)
	}
	// The test's server is on loopback, which another user's project may
	// reach only when the daemon's config allows it.
	loopback, _ := config.ParseHostPattern("127.0.0.1")
	n, _ := newNotifier(t, nil, Options{AllowHosts: []config.HostPattern{loopback}})
	ev := SampleEvent()
	ev.Owner = owner

	rule := config.NotifyRule{On: []string{"ended"}, Webhook: srv.URL, SecretFile: rootOnly}
	if err := n.Test(context.Background(), rule, FromProject, ev); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("cannot be read as user %d", owner.UID)) {
		t.Fatalf("project rule with root's file: Test = %v, want refused", err)
	}
	// The daemon's own rule may name it.
	if err := n.Test(context.Background(), rule, FromDaemon, ev); err != nil {
		t.Fatalf("daemon rule with root's file: %v", err)
	}
	if got := srv.next(t, time.Second).header.Get("Authorization"); got != "Bearer root-only" {
		t.Errorf("Authorization = %q", got)
	}
	rule.SecretFile = "~/token"
	if err := n.Test(context.Background(), rule, FromProject, ev); err != nil {
		t.Fatalf("project rule with the user's file: %v", err)
	}
	if got := srv.next(t, time.Second).header.Get("Authorization"); got != "Bearer users-own" {
		t.Errorf("Authorization = %q, want the user's", got)
	}

	t.Setenv("SESSIOND_TEST_ROOT_SECRET", "Bearer daemon-env")
	rule.SecretFile, rule.SecretEnv = "", "SESSIOND_TEST_ROOT_SECRET"
	if err := n.Test(context.Background(), rule, FromProject, ev); err == nil || !strings.Contains(err.Error(), "is not set") {
		t.Fatalf("project rule naming the root daemon's variable: Test = %v, want not set", err)
	}
}

// TestWebhookProjectDestinations: under a root daemon, another user's
// project may not make the daemon post to loopback, link-local or its own
// listener, unless notify_allow_hosts allows it; nothing is sent, and the
// error says why.
func TestWebhookProjectDestinations(t *testing.T) {
	owner := throwawayUser(t)
	srv := newHookServer(t)
	own, _ := netip.ParseAddrPort("10.11.12.13:9477")
	for _, tc := range []struct {
		name  string
		url   string
		allow []string
		want  string // "" for delivered
	}{
		{"loopback", srv.URL, nil, "is a loopback address"},
		{"localhost by name", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), nil, "is a loopback address"},
		{"link-local", "http://169.254.169.254/latest/meta-data", nil, "is a link-local address"},
		{"unspecified", "http://0.0.0.0:1/", nil, "unspecified"},
		{"the daemon's listener", "http://10.11.12.13:9477/metrics", nil, "the daemon's own listener"},
		{"allowed by address", srv.URL, []string{"127.0.0.1"}, ""},
		{"allowed by prefix and port", srv.URL, []string{"127.0.0.0/8:" + srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]}, ""},
		{"another port is not allowed", srv.URL, []string{"127.0.0.1:1"}, "is a loopback address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var allow []config.HostPattern
			for _, a := range tc.allow {
				p, err := config.ParseHostPattern(a)
				if err != nil {
					t.Fatal(err)
				}
				allow = append(allow, p)
			}
			n, _ := newNotifier(t, nil, Options{AllowHosts: allow, OwnListeners: []netip.AddrPort{own}})
			ev := SampleEvent()
			ev.Owner = owner
			rule := config.NotifyRule{On: []string{"ended"}, Webhook: tc.url, Timeout: config.Duration{Duration: 2 * time.Second}, Retries: new(int)}
			err := n.Test(context.Background(), rule, FromProject, ev)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Test = %v, want delivered", err)
				}
				srv.next(t, time.Second)
				return
			}
			if err == nil || !errors.Is(err, ErrDestination) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Test = %v, want refused: %s", err, tc.want)
			}
			// The daemon's own rules are the daemon owner's choice.
			if tc.name == "loopback" {
				if err := n.Test(context.Background(), rule, FromDaemon, ev); err != nil {
					t.Errorf("a daemon rule to loopback: %v", err)
				}
				srv.next(t, time.Second)
			}
		})
	}
}
