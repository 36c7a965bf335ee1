package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sessiond/sessiond/ipc"
)

func TestObserveEvents(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ended := t0.Add(time.Minute)
	old := t0.Add(-time.Hour)
	recs := map[string]ipc.Session{
		"w":   {ID: "w", State: ipc.StateWarned, WarnAt: t0},
		"ww":  {ID: "ww", State: ipc.StateWarned, WarnAt: t0.Add(time.Hour), Warning: &ipc.Warning{Reason: "waiting"}},
		"r0":  {ID: "r0", State: ipc.StateEnded, Restarts: 1},
		"s":   {ID: "s", State: ipc.StateStopping, EndReason: ipc.EndTimeout, Deadline: t0},
		"i":   {ID: "i", State: ipc.StateStopping, EndReason: ipc.EndInterrupted, Deadline: t0},
		"e":   {ID: "e", State: ipc.StateEnded, EndReason: ipc.EndComplete, EndedAt: &ended},
		"old": {ID: "old", State: ipc.StateEnded, EndReason: ipc.EndCrashed, EndedAt: &old},
	}
	m := New(Sources{Version: "v1.2.3", Since: t0.Add(-time.Minute),
		Session: func(id string) (ipc.Session, bool) { r, ok := recs[id]; return r, ok }})
	for _, ev := range []ipc.Event{
		{Type: ipc.EventStarted, SessionID: "w"},
		{Type: ipc.EventStarted, SessionID: "s"},
		{Type: ipc.EventFailed},
		// A restart (by its policy, or sessionctl restart's: no event of
		// its own) and a usage limit's continuation (its restarts kept).
		{Type: ipc.EventStarted, SessionID: "r1", Data: []byte(`{"id":"r1","restart_of":"r0","restarts":2}`)},
		{Type: ipc.EventRestarted, SessionID: "r1"},
		{Type: ipc.EventStarted, SessionID: "c1", Data: []byte(`{"id":"c1","restart_of":"r0","restarts":1}`)},
		{Type: ipc.EventWarned, SessionID: "w", Time: t0.Add(20 * time.Millisecond)},
		// A waiting warning is no deadline's.
		{Type: ipc.EventWarned, SessionID: "ww", Time: t0},
		{Type: ipc.EventStopping, SessionID: "s", Time: t0.Add(3 * time.Millisecond)},
		{Type: ipc.EventStopping, SessionID: "i", Time: t0.Add(time.Hour)},
		{Type: ipc.EventEnded, SessionID: "e", Time: ended.Add(15 * time.Millisecond)},
		{Type: ipc.EventEnded, SessionID: "old", Time: t0},
		{Type: ipc.EventEnded, SessionID: "gone", Time: t0},
		{Type: ipc.EventActivity, SessionID: "w"},
	} {
		m.Observe(ev)
	}
	for name, tc := range map[string]struct {
		got, want float64
	}{
		"starts":           {counterValue(t, m, "sessiond_session_starts_total"), 4},
		"start failures":   {counterValue(t, m, "sessiond_session_start_failures_total"), 1},
		"restarts":         {counterValue(t, m, "sessiond_session_restarts_total"), 1},
		"warnings":         {counterValue(t, m, "sessiond_session_warnings_total"), 1},
		"ends complete":    {counterValue(t, m, "sessiond_session_ends_total", "reason", ipc.EndComplete), 1},
		"ends crashed":     {counterValue(t, m, "sessiond_session_ends_total", "reason", ipc.EndCrashed), 1},
		"ends timeout":     {counterValue(t, m, "sessiond_session_ends_total", "reason", ipc.EndTimeout), 0},
		"warning late sum": {histSum(t, m, "sessiond_warning_lateness_seconds"), 0.020},
		// Only the timeout's stop is a deadline's; the interrupted one is not.
		"deadline late sum":   {histSum(t, m, "sessiond_deadline_lateness_seconds"), 0.003},
		"deadline late count": {histCount(t, m, "sessiond_deadline_lateness_seconds"), 1},
		// The end recorded before the daemon started is not its latency.
		"handoff count": {histCount(t, m, "sessiond_handoff_latency_seconds"), 1},
		"handoff sum":   {histSum(t, m, "sessiond_handoff_latency_seconds"), 0.015},
	} {
		if diff := tc.got - tc.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s = %v, want %v", name, tc.got, tc.want)
		}
	}
}

func TestCheckpointsAndRequests(t *testing.T) {
	m := New(Sources{})
	m.Checkpoint(30*time.Millisecond, false, nil)
	m.Checkpoint(5*time.Millisecond, true, nil)
	m.Checkpoint(time.Second, false, errors.New("git failed"))
	m.Request("GET /v1/sessions", 200)
	m.Request("GET /v1/sessions", 200)
	m.Request("unmatched", 404)
	if got := counterValue(t, m, "sessiond_checkpoint_failures_total"); got != 1 {
		t.Errorf("checkpoint failures = %v", got)
	}
	if got := counterValue(t, m, "sessiond_api_requests_total", "route", "GET /v1/sessions", "code", "200"); got != 2 {
		t.Errorf("requests = %v", got)
	}
	fams := scrape(t, m)
	byOutcome := map[string]uint64{}
	for _, mt := range fams["sessiond_checkpoint_duration_seconds"].GetMetric() {
		byOutcome[mt.GetLabel()[0].GetValue()] = mt.GetHistogram().GetSampleCount()
	}
	if byOutcome["made"] != 1 || byOutcome["unchanged"] != 1 || byOutcome["failed"] != 1 {
		t.Errorf("checkpoints by outcome = %v", byOutcome)
	}
}

func TestSessionsAndWatchers(t *testing.T) {
	sessions := []ipc.Session{
		{State: ipc.StateRunning, Agent: &ipc.Agent{State: ipc.AgentWorking}},
		{State: ipc.StateRunning, Agent: &ipc.Agent{State: ipc.AgentWaiting}},
		{State: ipc.StateWarned, Agent: &ipc.Agent{}},
		{State: ipc.StateRunning},
		{State: ipc.StateEnded, Agent: &ipc.Agent{State: ipc.AgentIdle}},
	}
	m := New(Sources{Version: "v9",
		Sessions:     func() []ipc.Session { return sessions },
		ProjectWatch: func() Counts { return Counts{Events: 7, Overflows: 1} },
		LogWatch:     func() Counts { return Counts{Events: 3} },
	})
	fams := scrape(t, m)
	got := map[string]float64{}
	for _, name := range []string{"sessiond_sessions", "sessiond_agent_sessions", "sessiond_watch_events_total", "sessiond_watch_overflows_total"} {
		for _, mt := range fams[name].GetMetric() {
			v := mt.GetGauge().GetValue() + mt.GetCounter().GetValue()
			got[name+"/"+mt.GetLabel()[0].GetValue()] = v
		}
	}
	for k, want := range map[string]float64{
		"sessiond_sessions/running": 3, "sessiond_sessions/warned": 1, "sessiond_sessions/ended": 1, "sessiond_sessions/failed": 0,
		// Ended sessions' agents are not counted; an agent with no state yet is unknown.
		"sessiond_agent_sessions/working": 1, "sessiond_agent_sessions/waiting": 1, "sessiond_agent_sessions/idle": 0, "sessiond_agent_sessions/unknown": 1,
		"sessiond_watch_events_total/projects": 7, "sessiond_watch_overflows_total/projects": 1, "sessiond_watch_events_total/logs": 3,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if bi := fams["sessiond_build_info"]; bi == nil || bi.GetMetric()[0].GetLabel()[0].GetValue() != "v9" {
		t.Errorf("build info = %v", bi)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds"} {
		if f := fams[name]; f == nil || len(f.GetMetric()) == 0 {
			t.Errorf("no %s", name)
		} else if mt := f.GetMetric()[0]; mt.GetGauge().GetValue()+mt.GetCounter().GetValue() <= 0 {
			t.Errorf("%s = %v", name, mt)
		}
	}
}

// scrape serves the metrics once and parses the text format.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content type %q", ct)
	}
	body, _ := io.ReadAll(rec.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse scrape: %v\n%s", err, body)
	}
	return fams
}

func histSum(t *testing.T, m *Metrics, name string) float64 {
	return scrape(t, m)[name].GetMetric()[0].GetHistogram().GetSampleSum()
}

func histCount(t *testing.T, m *Metrics, name string) float64 {
	return float64(scrape(t, m)[name].GetMetric()[0].GetHistogram().GetSampleCount())
}

// counterValue is the value of the counter name whose labels are the
// pairs given, as a scrape shows it (0 and an error when absent).
func counterValue(t *testing.T, m *Metrics, name string, pairs ...string) float64 {
	t.Helper()
	f := scrape(t, m)[name]
	if f == nil {
		t.Errorf("no %s in the scrape", name)
		return 0
	}
next:
	for _, mt := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range mt.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if len(labels) != len(pairs)/2 {
			continue
		}
		for i := 0; i+1 < len(pairs); i += 2 {
			if labels[pairs[i]] != pairs[i+1] {
				continue next
			}
		}
		return mt.GetCounter().GetValue()
	}
	t.Errorf("no %s%v in the scrape", name, pairs)
	return 0
}

// TestTextFormat: the scrape is what Prometheus's own parser reads, HELP
// and TYPE for every family, histogram buckets cumulative and ending in
// +Inf, label values escaped.
func TestTextFormat(t *testing.T) {
	m := New(Sources{Version: "v1 \"quoted\"\nline"})
	h := m.handoff
	for _, v := range []float64{0.0005, 0.003, 0.003, 7, 99} {
		h.Observe(v)
	}
	m.Request("GET /v1/sessions/{id}", 404)
	fams := scrape(t, m)
	hf := fams["sessiond_handoff_latency_seconds"]
	if hf.GetType().String() != "HISTOGRAM" {
		t.Fatalf("handoff type %v", hf.GetType())
	}
	hist := hf.GetMetric()[0].GetHistogram()
	if hist.GetSampleCount() != 5 || hist.GetSampleSum() < 106.006 || hist.GetSampleSum() > 106.007 {
		t.Errorf("count %d sum %v", hist.GetSampleCount(), hist.GetSampleSum())
	}
	want := map[float64]uint64{0.001: 1, 0.0025: 1, 0.005: 3, 5: 3, 10: 4, 30: 4}
	for _, b := range hist.GetBucket() {
		if n, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != n {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), n)
		}
	}
	if bi := fams["sessiond_build_info"].GetMetric()[0].GetLabel()[0].GetValue(); bi != "v1 \"quoted\"\nline" {
		t.Errorf("escaped label read back as %q", bi)
	}
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
	}
}
