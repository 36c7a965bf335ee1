package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
)

// Notifications (docs/notifications.md) through the real daemon: webhooks
// to a server in the test, commands that record what they were given,
// sinks that hang, floods, sessionctl notify and sessiond config check.

// hookHit is one request the test's webhook server received.
type hookHit struct {
	path   string
	header http.Header
	body   []byte
	at     time.Time
	// handoffThere says whether the payload's handoff_file existed when
	// the request came.
	handoffThere bool
}

// hookServer is a webhook receiver: each path answers with the next of its
// statuses (the last repeats); status 0 hangs until the client gives up.
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	statuses map[string][]int
	counts   map[string]int
	hits     []hookHit
	release  chan struct{}
}

func newHookServer(t *testing.T, statuses map[string][]int) *hookServer {
	t.Helper()
	s := &hookServer{statuses: statuses, counts: map[string]int{}, release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.release)
		s.Close()
	})
	return s
}

func (s *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h := hookHit{path: r.URL.Path, header: r.Header.Clone(), body: body, at: time.Now()}
	var p struct {
		HandoffFile string `json:"handoff_file"`
	}
	if json.Unmarshal(body, &p) == nil && p.HandoffFile != "" {
		h.handoffThere = fileExists(p.HandoffFile)
	}
	s.mu.Lock()
	st := s.statuses[r.URL.Path]
	status := http.StatusOK
	if len(st) > 0 {
		status = st[min(s.counts[r.URL.Path], len(st)-1)]
	}
	s.counts[r.URL.Path]++
	s.hits = append(s.hits, h)
	s.mu.Unlock()
	if status == 0 {
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	}
	w.WriteHeader(status)
}

// hitsOf returns the requests received on path so far.
func (s *hookServer) hitsOf(path string) []hookHit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []hookHit
	for _, h := range s.hits {
		if h.path == path {
			out = append(out, h)
		}
	}
	return out
}

// waitHits waits until path has received n requests.
func (s *hookServer) waitHits(t *testing.T, path string, n int, timeout time.Duration) []hookHit {
	t.Helper()
	var hits []hookHit
	waitFor(t, timeout, fmt.Sprintf("%d requests on %s", n, path), func() (bool, string) {
		hits = s.hitsOf(path)
		return len(hits) >= n, fmt.Sprintf("%d requests", len(hits))
	})
	return hits
}

// notifyStats is the counters of sessionctl notify rules --json.
type notifyStats struct {
	Published  uint64 `json:"published"`
	Duplicates uint64 `json:"duplicates"`
	Queued     uint64 `json:"queued"`
	Suppressed uint64 `json:"suppressed"`
	Dropped    uint64 `json:"dropped"`
	Sent       uint64 `json:"sent"`
	Failed     uint64 `json:"failed"`
	Pending    int64  `json:"pending"`
}

// notifyStatus is sessionctl notify rules --json.
type notifyStatus struct {
	Rules []struct {
		Number int    `json:"number"`
		Origin string `json:"origin"`
		Index  int    `json:"index"`
		Label  string `json:"label"`
		Rule   struct {
			Name    string   `json:"name"`
			On      []string `json:"on"`
			Command []string `json:"command"`
			Webhook string   `json:"webhook"`
		} `json:"rule"`
	} `json:"rules"`
	Stats      notifyStats `json:"stats"`
	ProjectDir string      `json:"project_dir"`
}

func (d *daemon) notifyStatus(args ...string) notifyStatus {
	d.t.Helper()
	out := d.mustCtl(append([]string{"--json", "notify", "rules"}, args...)...)
	var st notifyStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		d.t.Fatalf("notify rules --json: %v\n%s", err, out)
	}
	return st
}

// waitStats waits until the notifier's counters satisfy cond.
func (d *daemon) waitStats(what string, timeout time.Duration, cond func(notifyStats) bool) notifyStats {
	d.t.Helper()
	var st notifyStats
	waitFor(d.t, timeout, what, func() (bool, string) {
		st = d.notifyStatus().Stats
		return cond(st), fmt.Sprintf("%+v", st)
	})
	return st
}

// logText returns the daemon's log so far.
func (d *daemon) logText() string {
	data, _ := os.ReadFile(d.logPath)
	return string(data)
}

// writePerm writes content to path, failing the test on error.
func writePerm(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
}

// normalizePayload replaces what differs from run to run in a payload with
// placeholders and indents it, keeping the order of its fields.
func normalizePayload(t *testing.T, body []byte, id, dir string) []byte {
	t.Helper()
	host, _ := os.Hostname()
	s := string(body)
	s = strings.ReplaceAll(s, dir, "$PROJECT")
	s = strings.ReplaceAll(s, `"`+id+`"`, `"$SESSION"`)
	s = strings.ReplaceAll(s, `"host":`+strconv.Quote(host), `"host":"$HOST"`)
	for re, repl := range map[string]string{
		`"id":"[0-9a-f]{32}"`:      `"id":"$ID"`,
		`"time":"[^"]+"`:           `"time":"$TIME"`,
		`"project_id":"[0-9a-f]+"`: `"project_id":"$PROJECT_ID"`,
	} {
		s = regexp.MustCompile(re).ReplaceAllLiteralString(s, repl)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(s), "", "  "); err != nil {
		t.Fatalf("payload is not JSON: %v\n%s", err, body)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func TestNotifyWebhook(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t, map[string][]int{"/retry": {500, 200}, "/hang": {0}})
	token := "Bearer e2e-secret-3f9c"
	secret := filepath.Join(t.TempDir(), "token")
	writePerm(t, secret, token+"\n", 0o600)
	cfg := fmt.Sprintf(`
[defaults]
checkpoint = ""

[[notify]]
name = "retry"
on = ["ended"]
webhook = "%s/retry"
retries = 2
secret_header = "X-Token"
secret_file = %q

[[notify]]
name = "hang"
on = ["ended:error"]
webhook = "%s/hang"
timeout = "500ms"
retries = 1
`, srv.URL, secret, srv.URL)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), cfg)
	dir := project(t)
	id := d.start(dir, "--name", "notify-e2e", "--", "sh", "-c", "exit 2")
	rec := d.waitEnded(id, 10*time.Second)
	if rec.EndReason != "error" {
		t.Fatalf("end reason %q, want error", rec.EndReason)
	}

	t.Run("retried after a 500", func(t *testing.T) {
		hits := srv.waitHits(t, "/retry", 2, 15*time.Second)
		first, second := hits[0], hits[1]
		if a, b := first.header.Get("Sessiond-Delivery"), second.header.Get("Sessiond-Delivery"); a == "" || a != b {
			t.Errorf("Sessiond-Delivery %q then %q, want one id on every attempt", a, b)
		}
		if got := second.header.Get("X-Token"); got != token {
			t.Errorf("X-Token = %q, want the secret file's content %q", got, token)
		}
		if got := second.header.Get("Sessiond-Event"); got != "ended" {
			t.Errorf("Sessiond-Event = %q, want ended", got)
		}
		if gap := second.at.Sub(first.at); gap < 900*time.Millisecond {
			t.Errorf("retry came %s after the 500, want the 1s backoff", gap)
		}
		if !second.handoffThere {
			t.Errorf("the payload's handoff_file did not exist when the notification came")
		}
		golden(t, "notify-webhook-ended.json.golden", string(normalizePayload(t, second.body, id, dir)))
	})
	t.Run("timeout after a hang", func(t *testing.T) {
		hits := srv.waitHits(t, "/hang", 2, 15*time.Second)
		if gap := hits[1].at.Sub(hits[0].at); gap < 1400*time.Millisecond {
			t.Errorf("second attempt %s after the first, want the 500ms timeout and the 1s backoff", gap)
		}
		st := d.waitStats("the hanging webhook to be given up", 15*time.Second, func(s notifyStats) bool { return s.Failed >= 1 && s.Sent >= 1 })
		if st.Failed != 1 || st.Sent != 1 || st.Pending != 0 {
			t.Errorf("counters %+v, want 1 sent, 1 failed, none pending", st)
		}
		time.Sleep(200 * time.Millisecond)
		if n := len(srv.hitsOf("/hang")); n != 2 {
			t.Errorf("the hanging webhook was tried %d times, want 2 (retries = 1)", n)
		}
		if log := d.logText(); !strings.Contains(log, "notification failed") || !strings.Contains(log, `"rule":"hang"`) {
			t.Errorf("the daemon log does not tell of the failed notification of rule hang")
		}
	})
	t.Run("secret written nowhere", func(t *testing.T) {
		if strings.Contains(d.logText(), "e2e-secret") {
			t.Errorf("the daemon log holds the webhook secret")
		}
		for _, root := range []string{d.stateDir, filepath.Join(dir, ".sessiond")} {
			_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					if data, _ := os.ReadFile(p); bytes.Contains(data, []byte("e2e-secret")) {
						t.Errorf("%s holds the webhook secret", p)
					}
				}
				return nil
			})
		}
	})
}

func TestNotifyCommandSink(t *testing.T) {
	t.Parallel()
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), "[defaults]\ncheckpoint = \"\"\n")
	dir := project(t)
	out := t.TempDir()
	script(t, dir, "record.sh", `env > "$OUT/env.tmp" && mv "$OUT/env.tmp" "$OUT/env"
cat > "$OUT/stdin"
pwd > "$OUT/pwd"
if [ -f "$SESSIOND_HANDOFF_FILE" ]; then echo yes > "$OUT/handoff-seen"; fi
echo recorded
`)
	writePerm(t, filepath.Join(dir, "sessiond.toml"), fmt.Sprintf(`[session]
env = { OUT = %q }

[[notify]]
name = "record"
on = ["ended:error"]
command = ["./record.sh"]

[[notify]]
name = "never"
on = ["ended:complete", "warned"]
command = ["touch", %q]
`, out, filepath.Join(out, "never")), 0o600)
	id := d.start(dir, "--", "sh", "-c", "exit 3")
	d.waitEnded(id, 10*time.Second)
	st := d.waitStats("the notification to be sent", 10*time.Second, func(s notifyStats) bool { return s.Sent+s.Failed >= 1 })
	if st.Queued != 1 || st.Sent != 1 {
		t.Errorf("counters %+v, want the one rule for ended:error queued and sent", st)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(waitFile(t, filepath.Join(out, "env"), 10*time.Second)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	for k, want := range map[string]string{
		"SESSIOND_EVENT": "ended", "SESSIOND_END_REASON": "error", "SESSIOND_EXIT_CODE": "3",
		"SESSIOND_SESSION_ID": id, "SESSIOND_PROJECT_DIR": dir, "SESSIOND_RULE": "record",
		"SESSIOND_HANDOFF_FILE": filepath.Join(dir, ".sessiond", "handoff.json"), "SESSIOND_SIGNAL": "",
		"SESSIOND_SOCKET": d.sock, "OUT": out,
	} {
		if got, ok := env[k]; !ok || got != want {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, want)
		}
	}
	if _, ok := env["NOTIFY_SOCKET"]; ok {
		t.Errorf("the command was given NOTIFY_SOCKET")
	}
	var p map[string]any
	stdin := waitLine(t, filepath.Join(out, "stdin"), 5*time.Second)
	if err := json.Unmarshal(stdin, &p); err != nil {
		t.Fatalf("stdin is not the JSON payload: %v\n%s", err, stdin)
	}
	if p["event"] != "ended" || p["session_id"] != id || p["exit_code"] != float64(3) || p["end_reason"] != "error" || p["version"] != float64(1) {
		t.Errorf("payload on stdin: %v", p)
	}
	if got := strings.TrimSpace(string(waitLine(t, filepath.Join(out, "pwd"), 5*time.Second))); got != dir {
		t.Errorf("the command ran in %s, want the project %s", got, dir)
	}
	if !fileExists(filepath.Join(out, "handoff-seen")) {
		t.Errorf("the handoff was not on disk when the ended notification ran")
	}
	if fileExists(filepath.Join(out, "never")) {
		t.Errorf("a rule for ended:complete and warned ran at an end with an error")
	}
	// The command's output goes to the session's log, as on_warning's did.
	waitFor(t, 5*time.Second, "the command's output in the session log", func() (bool, string) {
		logs := d.mustCtl("logs", id)
		return strings.Contains(logs, "recorded"), logs
	})
}

func TestNotifyHangingSinkDelaysNothing(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t, map[string][]int{"/hang": {0}})
	tmp := t.TempDir()
	pids, fast := filepath.Join(tmp, "pids"), filepath.Join(tmp, "fast")
	cfg := fmt.Sprintf(`
[defaults]
checkpoint = ""

[[notify]]
name = "hang-command"
on = ["started", "ended"]
command = ["sh", "-c", "echo $$ >> %s; exec sleep 60"]
timeout = "2m"

[[notify]]
name = "hang-webhook"
on = ["ended"]
webhook = "%s/hang"
timeout = "1m"
retries = 0

[[notify]]
name = "fast"
on = ["ended"]
command = ["sh", "-c", "date +%%s.%%N > %s"]
`, pids, srv.URL, fast)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), cfg)
	dir := project(t)
	id := d.start(dir, "--stop-grace", "1s", "--", "sleep", "1000")
	started := readPID(t, pids)
	killOnCleanup(t, started)

	begin := time.Now()
	out := d.mustCtl("stop", id)
	took := time.Since(begin)
	if took > 3*time.Second {
		t.Errorf("stop took %s with a hanging sink, want well under its 1s grace plus a margin", took)
	}
	handoff := filepath.Join(dir, ".sessiond", "handoff.json")
	if !fileExists(handoff) {
		t.Errorf("stop returned before the handoff was on disk")
	}
	if !strings.Contains(out, "handoff") {
		t.Errorf("stop printed %q, want the handoff's path", out)
	}
	// The fast rule is not held up by the two hanging ones.
	stamp := strings.TrimSpace(string(waitLine(t, fast, 5*time.Second)))
	sec, err := strconv.ParseFloat(stamp, 64)
	if err != nil {
		t.Fatalf("fast rule wrote %q", stamp)
	}
	if late := time.Unix(0, int64(sec*1e9)).Sub(begin); late > 3*time.Second {
		t.Errorf("the fast rule ran %s after the stop began, want at once", late)
	}
	srv.waitHits(t, "/hang", 1, 5*time.Second)
	// The hanging command of the start was the session's: its end killed it.
	waitFor(t, 5*time.Second, "the started notification's command to end with its session", func() (bool, string) {
		return !alive(started), fmt.Sprintf("pid %d alive", started)
	})
	var ended int
	waitFor(t, 5*time.Second, "the ended notification's command to run", func() (bool, string) {
		data, _ := os.ReadFile(pids)
		lines := strings.Fields(string(data))
		if len(lines) < 2 {
			return false, string(data)
		}
		ended, _ = strconv.Atoi(lines[1])
		return ended > 0, string(data)
	})
	killOnCleanup(t, ended)

	// Shutdown sends what is queued for a few seconds, then stops the rest.
	begin = time.Now()
	if code := d.stop(); code != 0 {
		t.Errorf("sessiond exited %d", code)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("shutdown took %s with hanging sinks, want at most their flush time and a margin", took)
	}
	if alive(ended) {
		t.Errorf("the hanging notification command (pid %d) outlived the daemon", ended)
	}
	if log := d.logText(); !strings.Contains(log, "notifications left unsent at shutdown") {
		t.Errorf("the daemon log does not say what shutdown left unsent")
	}
}

func TestNotifyFloodStaysBounded(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t, map[string][]int{"/hang": {0}})
	fast := filepath.Join(t.TempDir(), "fast")
	cfg := fmt.Sprintf(`
[defaults]
checkpoint = ""
concurrent = true

[[notify]]
name = "slow"
on = ["started", "ended"]
webhook = "%s/hang"
timeout = "1m"
retries = 0

[[notify]]
name = "fast"
on = ["ended"]
session_name = "last"
command = ["sh", "-c", "echo $SESSIOND_SESSION_ID > %s"]
`, srv.URL, fast)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), cfg)
	dir := project(t)
	const sessions = 30
	for i := range sessions {
		name := fmt.Sprintf("s%d", i)
		if i == sessions-1 {
			name = "last"
		}
		d.start(dir, "--name", name, "--", "true")
	}
	st := d.waitStats("every start and end to be published", 20*time.Second, func(s notifyStats) bool { return s.Published >= 2*sessions })
	last := strings.TrimSpace(string(waitLine(t, fast, 10*time.Second)))
	if !validID(last) {
		t.Errorf("the fast rule, behind no one, wrote %q", last)
	}
	st = d.waitStats("the fast rule's notification to be sent", 5*time.Second, func(s notifyStats) bool { return s.Sent >= 1 })
	// One request hangs; the slow rule's queue holds 32; the rest is
	// dropped. The fast rule matched the last session's end alone.
	if st.Pending != 33 {
		t.Errorf("%d notifications pending, want the queue (32) and the one being sent", st.Pending)
	}
	if want := uint64(2*sessions - 33); st.Dropped != want {
		t.Errorf("%d dropped, want %d", st.Dropped, want)
	}
	if st.Queued+st.Dropped != st.Published+1 || st.Queued != uint64(st.Pending)+st.Sent+st.Failed {
		t.Errorf("counters %+v do not add up: every match is queued or dropped, every queued one pending or done", st)
	}
	if n := strings.Count(d.logText(), "notification dropped: queue full"); n < 1 || n > 2 {
		t.Errorf("the daemon logged %d drops, want one line (then one per 10s at most)", n)
	}
	begin := time.Now()
	d.stop()
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("shutdown took %s with a full queue", took)
	}
}

func TestNotifyCrashedAndRestartLimit(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t, nil)
	stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	cfg := fmt.Sprintf(`
[defaults]
checkpoint = ""

[[notify]]
on = ["restart_limit", "restarted", "failed"]
webhook = "%s/daemon"
`, srv.URL)
	d := startDaemonWith(t, stateDir, sock, cfg)

	t.Run("restart limit", func(t *testing.T) {
		dir := project(t)
		d.with(t).start(dir, "--restart", "on-failure", "--", "false")
		// max_restarts is 3: three restarts, then the limit.
		hits := srv.waitHits(t, "/daemon", 4, 30*time.Second)
		var events []string
		for _, h := range hits {
			var p struct{ Event string }
			_ = json.Unmarshal(h.body, &p)
			events = append(events, p.Event)
		}
		if want := "restarted restarted restarted restart_limit"; strings.Join(events, " ") != want {
			t.Errorf("events %v, want %s", events, want)
		}
	})
	t.Run("crashed", func(t *testing.T) {
		dir := project(t)
		writePerm(t, filepath.Join(dir, "sessiond.toml"), fmt.Sprintf(`[[notify]]
on = ["crashed"]
webhook = "%s/project"
`, srv.URL), 0o600)
		id := d.with(t).start(dir, "--", "sleep", "1000")
		pid := d.with(t).inspect(id).PID
		killOnCleanup(t, pid)
		d.kill9()
		if err := syscallKill(pid); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the session's process to die", func() (bool, string) { return !alive(pid), "" })
		d2 := startDaemonWith(t, stateDir, sock, cfg)
		rec := d2.waitEnded(id, 10*time.Second)
		if rec.EndReason != "crashed" {
			t.Fatalf("end reason %q, want crashed", rec.EndReason)
		}
		hits := srv.waitHits(t, "/project", 1, 10*time.Second)
		var p struct {
			Event       string `json:"event"`
			EndReason   string `json:"end_reason"`
			SessionID   string `json:"session_id"`
			HandoffFile string `json:"handoff_file"`
		}
		if err := json.Unmarshal(hits[0].body, &p); err != nil {
			t.Fatal(err)
		}
		if p.Event != "ended" || p.EndReason != "crashed" || p.SessionID != id || p.HandoffFile != filepath.Join(dir, ".sessiond", "handoff.json") {
			t.Errorf("payload %+v, want the crashed end of %s", p, id)
		}
		if !hits[0].handoffThere {
			t.Errorf("the crashed session's handoff was not on disk when the notification came")
		}
	})
}

func TestNotifyTestCommand(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t, nil)
	cfg := fmt.Sprintf(`
[[notify]]
name = "hook"
on = ["ended"]
webhook = "%s/ok"

[[notify]]
name = "broken"
on = ["failed"]
command = ["sh", "-c", "echo boom >&2; exit 4"]
`, srv.URL)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), cfg)
	dir := project(t)
	got := filepath.Join(t.TempDir(), "stdin")
	script(t, dir, "notify.sh", "cat > "+got+"\n")
	writePerm(t, filepath.Join(dir, "sessiond.toml"), `[session]
on_warning = "exit 0"

[[notify]]
name = "proj"
on = ["warned"]
command = ["./notify.sh"]
`, 0o600)

	t.Run("a webhook by name", func(t *testing.T) {
		r := d.with(t).ctl("notify", "test", "hook")
		if r.code != 0 || !strings.Contains(r.stdout, "hook") || !strings.Contains(r.stdout, "delivered") {
			t.Errorf("want exit 0 and hook delivered\n%s", r)
		}
		hits := srv.waitHits(t, "/ok", 1, 5*time.Second)
		var p map[string]any
		if err := json.Unmarshal(hits[0].body, &p); err != nil || p["event"] != "test" || p["session_id"] != "test0000" {
			t.Errorf("sample payload %s (%v), want event test of session test0000", hits[0].body, err)
		}
	})
	t.Run("a failing command", func(t *testing.T) {
		r := d.with(t).ctl("notify", "test", "broken")
		if r.code != 1 || !strings.Contains(r.stdout, "exit status 4") || !strings.Contains(r.stdout, "boom") {
			t.Errorf("want exit 1 with the exit status and the output\n%s", r)
		}
	})
	t.Run("every rule of the project", func(t *testing.T) {
		r := d.with(t).ctl("--json", "notify", "test", "--dir", dir)
		var resp struct {
			Results []struct {
				Number    int    `json:"number"`
				Origin    string `json:"origin"`
				Label     string `json:"label"`
				Delivered bool   `json:"delivered"`
				Error     string `json:"error"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
			t.Fatalf("%v\n%s", err, r)
		}
		var summary []string
		for _, x := range resp.Results {
			summary = append(summary, fmt.Sprintf("%d %s %s %v", x.Number, x.Origin, x.Label, x.Delivered))
		}
		want := "1 daemon hook true|2 daemon broken false|3 project proj true|4 spec on_warning true"
		if strings.Join(summary, "|") != want || r.code != 1 {
			t.Errorf("results %q (exit %d), want %q and exit 1 for the broken one", strings.Join(summary, "|"), r.code, want)
		}
		var p map[string]any
		if err := json.Unmarshal(waitFile(t, got, 5*time.Second), &p); err != nil || p["project_dir"] != dir {
			t.Errorf("the project's command read %v (%v), want the sample for %s", p, err, dir)
		}
	})
	t.Run("by number", func(t *testing.T) {
		r := d.with(t).ctl("notify", "test", "--dir", dir, "4")
		if r.code != 0 || !strings.Contains(r.stdout, "on_warning") {
			t.Errorf("want the spec's on_warning tested\n%s", r)
		}
	})
	t.Run("unknown rule", func(t *testing.T) {
		r := d.with(t).ctl("notify", "test", "nosuch")
		if r.code != 1 || !strings.Contains(r.stderr, `"nosuch"`) || !strings.Contains(r.stderr, "1 hook") {
			t.Errorf("want exit 1 naming the rule asked for and those there are\n%s", r)
		}
	})
	t.Run("rules", func(t *testing.T) {
		st := d.with(t).notifyStatus("--dir", dir)
		if len(st.Rules) != 4 || st.Rules[2].Origin != "project" || st.Rules[2].Rule.Name != "proj" || st.ProjectDir != dir {
			t.Errorf("notify rules: %+v", st)
		}
		if got := st.Rules[0].Rule.Webhook; got != srv.URL+"/…" {
			t.Errorf("webhook shown as %q, want its path cut: %q", got, srv.URL+"/…")
		}
		r := d.with(t).ctl("notify", "rules")
		if r.code != 0 || !strings.Contains(r.stdout, "ORIGIN") || !strings.Contains(r.stdout, "broken") {
			t.Errorf("notify rules table\n%s", r)
		}
	})
}

func TestConfigCheckNotify(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, cfg string, args ...string) (result, string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "sessiond.toml")
		writePerm(t, path, cfg, 0o600)
		return execute(t, cleanEnv(), sessiondBin, append([]string{"config", "check", "--config", path}, args...)...), path
	}
	for _, tc := range []struct {
		name, cfg string
		line      int
		key, msg  string
	}{
		{"unknown event", "[[notify]]\non = [\"ended\", \"exploded\"]\ncommand = [\"true\"]\n", 2, "notify[0].on", `unknown event "exploded"`},
		{"unknown end reason", "[[notify]]\non = [\"ended:bored\"]\ncommand = [\"true\"]\n", 2, "notify[0].on", `unknown end reason "bored"`},
		{"no sink", "log_level = \"info\"\n\n[[notify]]\non = [\"ended\"]\n", 3, "notify[0].command", "no sink"},
		{"two sinks", "[[notify]]\non = [\"ended\"]\ncommand = [\"true\"]\ndesktop = true\n", 4, "notify[0].desktop", "give exactly one sink, got command and desktop"},
		{"command not found", "[[notify]]\non = [\"ended\"]\ncommand = [\"true\"]\n[[notify]]\non = [\"ended\"]\n\ncommand = [\"/nonexistent/page-me\"]\n", 7, "notify[1].command", "/nonexistent/page-me"},
		{"bad scheme", "[[notify]]\non = [\"ended\"]\nwebhook = \"ftp://example.com/x\"\n", 3, "notify[0].webhook", `scheme "ftp"`},
		{"no host", "[[notify]]\non = [\"ended\"]\nwebhook = \"https:///x\"\n", 3, "notify[0].webhook", "the URL has no host"},
		{"secret env unset", "[[notify]]\non = [\"ended\"]\nwebhook = \"https://example.com/x\"\nsecret_env = \"SESSIOND_E2E_UNSET_TOKEN\"\n", 4, "notify[0].secret_env", "SESSIOND_E2E_UNSET_TOKEN is not set"},
		{"secret file missing", "[[notify]]\non = [\"ended\"]\nwebhook = \"https://example.com/x\"\nsecret_file = \"/nonexistent/token\"\n", 4, "notify[0].secret_file", "/nonexistent/token"},
		{"unknown key", "[[notify]]\non = [\"ended\"]\nurl = \"https://example.com/x\"\n", 3, "notify.url", "unknown key"},
		{"wrong type", "[[notify]]\non = \"ended\"\ncommand = [\"true\"]\n", 2, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, path := check(t, tc.cfg)
			want := fmt.Sprintf("%s:%d: %s: %s", path, tc.line, tc.key, tc.msg)
			if tc.key == "" {
				want = fmt.Sprintf("%s:%d:", path, tc.line)
			}
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("want exit 1 and %q\n%s", want, r)
			}
		})
	}
	t.Run("every problem at once", func(t *testing.T) {
		r, path := check(t, "[[notify]]\non = [\"ended\"]\ncommand = [\"/nonexistent/a\"]\n\n[[notify]]\non = [\"ended\"]\ncommand = [\"/nonexistent/b\"]\n")
		if r.code != 1 || !strings.Contains(r.stderr, path+":3: notify[0].command") || !strings.Contains(r.stderr, path+":7: notify[1].command") {
			t.Errorf("want both commands named\n%s", r)
		}
	})
	t.Run("valid, webhook shown without its path", func(t *testing.T) {
		r, _ := check(t, "[[notify]]\nname = \"slack\"\non = [\"ended:error\", \"crashed\"]\nwebhook = \"https://hooks.example.com/services/T0/B0/XYZ\"\ntemplate = \"slack\"\n")
		if r.code != 0 || !strings.Contains(r.stdout, `webhook = "https://hooks.example.com/…"`) || strings.Contains(r.stdout, "XYZ") {
			t.Errorf("want exit 0 and the webhook cut to its host\n%s", r)
		}
	})
	t.Run("project", func(t *testing.T) {
		dir := project(t)
		pfile := filepath.Join(dir, "sessiond.toml")
		writePerm(t, pfile, "[session]\ncommand = [\"true\"]\n\n[[notify]]\non = [\"warned\"]\ncommand = [\"./missing.sh\"]\n", 0o600)
		r, _ := check(t, "", "--project", dir)
		if want := pfile + ":6: notify[0].command"; r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "missing.sh") {
			t.Errorf("want exit 1 and %q\n%s", want, r)
		}
		script(t, dir, "missing.sh", "exit 0\n")
		if r, _ := check(t, "", "--project", dir); r.code != 0 {
			t.Errorf("once the command exists: want exit 0\n%s", r)
		}
	})
	t.Run("a start is refused with the line", func(t *testing.T) {
		d := startDaemon(t)
		dir := project(t)
		writePerm(t, filepath.Join(dir, "sessiond.toml"), "[[notify]]\non = [\"warned\", \"exploded\"]\ncommand = [\"true\"]\n", 0o600)
		r := d.ctl("start", dir, "--", "true")
		if want := "sessiond.toml:2: notify[0].on: unknown event \"exploded\""; r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("want the start refused with %q\n%s", want, r)
		}
	})
}

func TestNotifyRootDaemonRunsCommandsAsTheUser(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	sockDir, err := os.MkdirTemp("", "sdr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), filepath.Join(sockDir, "s.sock"), fmt.Sprintf(`
allowed_groups = [%q]

[defaults]
checkpoint = ""

[[notify]]
name = "daemon-rule"
on = ["ended"]
command = ["sh", "-c", "id -u > \"$SESSIOND_PROJECT_DIR/daemon-uid\""]
`, u.group))
	dir := u.project(t)
	cfg := filepath.Join(dir, "sessiond.toml")
	writePerm(t, cfg, "[[notify]]\non = [\"ended\"]\ncommand = [\"sh\", \"-c\", \"id -u > project-uid; id -g > project-gid\"]\n", 0o600)
	if err := os.Chown(cfg, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	r := u.ctl(t, d.sock, "start", "-q", dir, "--", "true")
	if r.code != 0 {
		t.Fatalf("start as %s:\n%s", u.name, r)
	}
	for file, want := range map[string]int{"daemon-uid": u.uid, "project-uid": u.uid, "project-gid": u.gid} {
		got := strings.TrimSpace(string(waitLine(t, filepath.Join(dir, file), 10*time.Second)))
		if got != strconv.Itoa(want) {
			t.Errorf("%s: the command ran as %s, want %d (the session's user)", file, got, want)
		}
	}
	r = u.ctl(t, d.sock, "--json", "notify", "rules")
	var st notifyStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Rules) != 1 || strings.Join(st.Rules[0].Rule.Command, " ") != "sh …" {
		t.Errorf("a user listing the daemon's rule: want its command without its arguments (%v)\n%s", err, r)
	}
	if st := d.notifyStatus(); len(st.Rules) != 1 || len(st.Rules[0].Rule.Command) != 3 {
		t.Errorf("root listing the daemon's rule: want its command whole: %+v", st.Rules)
	}
	r = u.ctl(t, d.sock, "notify", "test", "daemon-rule")
	if r.code != 1 || !strings.Contains(r.stderr, "only root and the daemon's user") {
		t.Errorf("a user testing the daemon's rule: want it refused\n%s", r)
	}
	if err := os.Remove(filepath.Join(dir, "project-uid")); err != nil {
		t.Fatal(err)
	}
	r = u.ctl(t, d.sock, "--json", "notify", "test", "--dir", dir)
	var resp struct {
		Results []struct {
			Origin    string `json:"origin"`
			Delivered bool   `json:"delivered"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil || r.code != 0 || len(resp.Results) != 1 || resp.Results[0].Origin != "project" {
		t.Errorf("a user testing every rule: want the project's alone, delivered (%v)\n%s", err, r)
	}
	if got := strings.TrimSpace(string(waitLine(t, filepath.Join(dir, "project-uid"), 5*time.Second))); got != strconv.Itoa(u.uid) {
		t.Errorf("notify test ran the project's command as %s, want %d", got, u.uid)
	}
}

func TestNotifyAgentWaitingOncePerSpell(t *testing.T) {
	t.Parallel()
	agents := agenttest.Build(t)
	srv := newHookServer(t, nil)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), fmt.Sprintf(`
[defaults]
checkpoint = ""

[[notify]]
name = "waiting"
on = ["agent_waiting"]
webhook = "%s/waiting"
`, srv.URL))
	dir := project(t)
	control := t.TempDir()
	// Two permission prompts; the hooks tell of each twice
	// (PermissionRequest, then Notification).
	id := d.start(dir, "--env", "FAKEAGENT_SCRIPT=prompt,ask=Bash,wait=next,ask=Bash,stop,exit",
		"--env", "FAKEAGENT_DIR="+control, "--env", "CLAUDE_CONFIG_DIR="+t.TempDir(),
		"--", filepath.Join(agents, "claude"), "-p", "do the task")
	agentState := func() string {
		var rec struct {
			Agent *struct {
				State string `json:"state"`
			} `json:"agent"`
		}
		_ = json.Unmarshal([]byte(d.mustCtl("inspect", id)), &rec)
		if rec.Agent == nil {
			return ""
		}
		return rec.Agent.State
	}
	srv.waitHits(t, "/waiting", 1, 20*time.Second)
	grant := filepath.Join(control, "grant")
	writePerm(t, grant, "", 0o600)
	waitFor(t, 10*time.Second, "the agent to work again", func() (bool, string) {
		st := agentState()
		return st == "working", st
	})
	if err := os.Remove(grant); err != nil {
		t.Fatal(err)
	}
	writePerm(t, filepath.Join(control, "next"), "", 0o600)
	hits := srv.waitHits(t, "/waiting", 2, 20*time.Second)
	writePerm(t, grant, "", 0o600)
	d.waitEnded(id, 20*time.Second)
	d.waitStats("the notifications to be sent", 10*time.Second, func(s notifyStats) bool { return s.Pending == 0 })
	if n := len(srv.hitsOf("/waiting")); n != 2 {
		t.Errorf("%d agent_waiting notifications for two waiting spells, want 2", n)
	}
	for _, h := range hits {
		var p map[string]any
		if err := json.Unmarshal(h.body, &p); err != nil || p["event"] != "agent_waiting" || p["session_id"] != id {
			t.Errorf("payload %s (%v), want agent_waiting of %s", h.body, err, id)
		}
	}
	if a, b := hits[0].header.Get("Sessiond-Delivery"), hits[1].header.Get("Sessiond-Delivery"); a == b {
		t.Errorf("two spells sent with one delivery id %q", a)
	}
}
