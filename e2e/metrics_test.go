package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsScrape is one scrape, parsed.
type metricsScrape map[string]*dto.MetricFamily

func parseScrape(t *testing.T, body []byte) metricsScrape {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse the scrape: %v\n%s", err, body)
	}
	return fams
}

// curlBody makes a GET with curl --unix-socket and returns the status,
// the content type and the body (curl's own decoding of a chunked body).
func curlBody(t *testing.T, sock, path string) (int, string, []byte) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "body")
	r := execute(t, os.Environ(), "curl", "-s", "--max-time", "30", "--unix-socket", sock, "-o", out,
		"-w", "%{http_code} %{content_type}", "http://sessiond"+path)
	if r.code != 0 {
		t.Fatalf("curl %s:\n%s", path, r)
	}
	var code int
	var ctype string
	fmt.Sscanf(r.stdout, "%d %s", &code, &ctype)
	body, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return code, ctype, body
}

// scrapeSocket scrapes GET /v1/metrics on the daemon's socket with curl.
func scrapeSocket(t *testing.T, d *daemon) metricsScrape {
	t.Helper()
	code, ctype, body := curlBody(t, d.sock, "/v1/metrics")
	if code != 200 || !strings.HasPrefix(ctype, "text/plain") {
		t.Fatalf("GET /v1/metrics: %d %s\n%s", code, ctype, body)
	}
	return parseScrape(t, body)
}

// value returns the value of the metric name whose labels include want
// (a histogram's sample count); -1 when there is none.
func (s metricsScrape) value(name string, want ...string) float64 {
	f := s[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == want[i] && l.GetValue() == want[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// sum returns a histogram's sum of samples.
func (s metricsScrape) sum(name string) float64 {
	if f := s[name]; f != nil && len(f.GetMetric()) > 0 {
		return f.GetMetric()[0].GetHistogram().GetSampleSum()
	}
	return -1
}

func TestMetricsOffByDefault(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	code, _, body := curlBody(t, d.sock, "/v1/metrics")
	var eb struct{ Error, Code string }
	if code != 404 || json.Unmarshal(body, &eb) != nil || !strings.Contains(eb.Error, "metrics are off: set metrics = true") {
		t.Errorf("GET /v1/metrics with metrics off: %d %s", code, body)
	}
}

// TestMetricsMoveWithSessions scrapes a real daemon over its socket and
// over metrics_listen while sessions start, checkpoint, get warned, time
// out and are stopped.
func TestMetricsMoveWithSessions(t *testing.T) {
	t.Parallel()
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t),
		"metrics = true\nmetrics_listen = \"127.0.0.1:0\"\n[defaults]\ncheckpoint = \"\"\n")
	// The daemon logs the address it got for port 0.
	var addr string
	waitFor(t, 10*time.Second, "the metrics address in the daemon's log", func() (bool, string) {
		data, _ := os.ReadFile(d.logPath)
		m := regexp.MustCompile(`"serving metrics".*"address":"([^"]+)"`).FindSubmatch(data)
		if m != nil {
			addr = string(m[1])
		}
		return m != nil, string(data)
	})

	before := scrapeSocket(t, d)
	if v := before.value("sessiond_session_starts_total"); v != 0 {
		t.Errorf("starts before any session = %v", v)
	}
	if v := before.value("sessiond_sessions", "state", "running"); v != 0 {
		t.Errorf("running before any session = %v", v)
	}
	if before.value("go_goroutines") <= 0 || before.value("process_resident_memory_bytes") <= 0 {
		t.Error("no Go or process metrics")
	}

	dir := project(t)
	// The second line comes once the log is watched.
	id := d.start(dir, "--", "sh", "-c", "echo hello; sleep 0.2; echo again; sleep 100")
	waitFor(t, 10*time.Second, "the session's output", func() (bool, string) {
		out := d.mustCtl("logs", id)
		return out == "hello\nagain\n", out
	})
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.mustCtl("checkpoint", id)
	timed := d.start(project(t), "--timeout", "2s", "--warn-before", "1s", "--stop-grace", "1s", "--", "sleep", "100")

	// A start answers as its session runs; its event follows at once.
	var live metricsScrape
	waitFor(t, 10*time.Second, "both starts counted", func() (bool, string) {
		live = scrapeSocket(t, d)
		v := live.value("sessiond_session_starts_total")
		return v == 2, fmt.Sprint(v)
	})
	for name, c := range map[string]struct{ got, want float64 }{
		"starts":                {live.value("sessiond_session_starts_total"), 2},
		"running":               {live.value("sessiond_sessions", "state", "running"), 2},
		"made checkpoints":      {live.value("sessiond_checkpoint_duration_seconds", "outcome", "made"), 1},
		"POST /v1/sessions 201": {live.value("sessiond_api_requests_total", "route", "POST /v1/sessions", "code", "201"), 2},
	} {
		if c.got != c.want {
			t.Errorf("while live, %s = %v, want %v", name, c.got, c.want)
		}
	}
	// The watchers count an event once they have read it.
	waitFor(t, 10*time.Second, "watch events of the project and of the log", func() (bool, string) {
		s := scrapeSocket(t, d)
		p, l := s.value("sessiond_watch_events_total", "watcher", "projects"), s.value("sessiond_watch_events_total", "watcher", "logs")
		return p > 0 && l > 0, fmt.Sprintf("projects %v, logs %v", p, l)
	})

	d.mustCtl("stop", id)
	d.waitEnded(timed, 15*time.Second)
	// The ended event follows the end on disk.
	var after metricsScrape
	waitFor(t, 10*time.Second, "both ends counted", func() (bool, string) {
		after = scrapeSocket(t, d)
		v := after.value("sessiond_handoff_latency_seconds")
		return v == 2, fmt.Sprint(v)
	})
	for name, c := range map[string]struct{ got, want float64 }{
		"running":             {after.value("sessiond_sessions", "state", "running"), 0},
		"ended":               {after.value("sessiond_sessions", "state", "ended"), 2},
		"ends interrupted":    {after.value("sessiond_session_ends_total", "reason", "interrupted"), 1},
		"ends timeout":        {after.value("sessiond_session_ends_total", "reason", "timeout"), 1},
		"warnings":            {after.value("sessiond_session_warnings_total"), 1},
		"warning lateness n":  {after.value("sessiond_warning_lateness_seconds"), 1},
		"deadline lateness n": {after.value("sessiond_deadline_lateness_seconds"), 1},
		"handoffs":            {after.value("sessiond_handoff_latency_seconds"), 2},
	} {
		if c.got != c.want {
			t.Errorf("after the ends, %s = %v, want %v", name, c.got, c.want)
		}
	}
	// Timers fire on time here: well under a second late.
	for _, h := range []string{"sessiond_warning_lateness_seconds", "sessiond_deadline_lateness_seconds"} {
		if s := after.sum(h); s < 0 || s > 1 {
			t.Errorf("%s sum = %v s", h, s)
		}
	}
	// Labels name routes, never sessions.
	for _, m := range after["sessiond_api_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if strings.Contains(l.GetValue(), id) {
				t.Errorf("a label holds a session id: %s", l.GetValue())
			}
		}
	}

	// The TCP listener serves the same metrics, and nothing else.
	resp, err := http.Get("http://" + addr + "/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if tcp := parseScrape(t, body); tcp.value("sessiond_session_ends_total", "reason", "timeout") != 1 {
		t.Errorf("metrics over TCP disagree:\n%s", body)
	}
	resp, err = http.Get("http://" + addr + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /v1/sessions over the metrics listener: %d, want 404", resp.StatusCode)
	}
}

// TestMetricsListenNeedsMetrics: metrics_listen without metrics is a
// config error naming the key and its line.
func TestMetricsListenNeedsMetrics(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "sessiond.toml")
	if err := os.WriteFile(cfg, []byte("log_level = \"info\"\nmetrics_listen = \"127.0.0.1:9477\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := execute(t, cleanEnv(), sessiondBin, "config", "check", "--config", cfg)
	if r.code != 1 || !strings.Contains(r.stderr, cfg+":2: metrics_listen: is set but metrics is false") {
		t.Errorf("config check:\n%s", r)
	}
}

// TestSyncsPerStart counts what a start syncs, through the daemon's own
// counter: two syncs before the reply (the session's directory in
// sessions/, and the starting record's content, synced while the command
// is started: the running record's write waits for it,
// state.WriteRecordDeferred), two after (the running record's content,
// the project's lock), none for the records' exchanges with their spares
// or for context.md. A stop's end is counted too, to keep its figure in
// sight.
func TestSyncsPerStart(t *testing.T) {
	t.Parallel()
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), "metrics = true\n[defaults]\ncheckpoint = \"\"\n")
	const n = 8
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = project(t)
	}
	settled := func(what string) float64 {
		var last float64 = -1
		var v float64
		waitFor(t, 10*time.Second, what+": the sync count to settle", func() (bool, string) {
			v = scrapeSocket(t, d).value("sessiond_state_syncs_total")
			ok := v == last
			last = v
			if !ok {
				time.Sleep(100 * time.Millisecond)
			}
			return ok, fmt.Sprint(v)
		})
		return v
	}
	before := settled("before")
	ids := make([]string, n)
	for i, dir := range dirs {
		ids[i] = d.start(dir, "--", "sleep", "100")
	}
	started := settled("after the starts")
	if per := (started - before) / n; per > 4 {
		t.Errorf("%v syncs a start, want at most 4 (2 before the reply, the running record's and the lock's after)", per)
	}
	for _, id := range ids {
		d.mustCtl("stop", id)
	}
	ended := settled("after the stops")
	t.Logf("syncs: %v a start, %v an end", (started-before)/n, (ended-started)/n)
}
