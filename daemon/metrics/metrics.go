package metrics

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// Counts is what a watcher has handled since it started.
type Counts struct {
	// Events are the inotify events read.
	Events uint64
	// Overflows are the times the kernel's event queue overflowed (events
	// were lost and a rescan followed).
	Overflows uint64
}

// Sources are what the metrics read when they are scraped.
type Sources struct {
	// Version is the daemon's version, for sessiond_build_info.
	Version string
	// Sessions returns the record of every session the daemon holds.
	Sessions func() []ipc.Session
	// Session returns the record of one session, for what an event does
	// not carry (the deadline a stop was due at, when an end began).
	Session func(id string) (ipc.Session, bool)
	// ProjectWatch and LogWatch count the events of the project watcher
	// and of the session logs' watcher.
	ProjectWatch func() Counts
	LogWatch     func() Counts
	// Syncs counts the syncs the daemon's writes made (nil: none).
	Syncs func() uint64
	// ContainedMemory is the memory the live sessions' cgroups are charged
	// together, and how many such sessions there are (nil: none).
	ContainedMemory func() (bytes int64, sessions int)
	// Since is when the daemon started: an end recorded before it was
	// finished by this daemon, and its handoff latency is not its own.
	Since time.Time
}

// Metrics are the daemon's metrics.
type Metrics struct {
	src Sources

	starts, startFailures, restarts, warnings *scalar
	ends                                      *counterVec
	warningLate, deadlineLate, handoff        *histogramFamily
	checkpoints                               *histogramVec
	checkpointFailures                        *scalar
	requests                                  *counterVec

	fams []family
}

// latenessBuckets are for timers that should fire on time: a millisecond
// to ten seconds late.
var latenessBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns the metrics, reading src when scraped.
func New(src Sources) *Metrics {
	m := &Metrics{src: src}
	counter := func(name, help string) *scalar { return &scalar{name: "sessiond_" + name, help: help} }
	hist := func(name, help string, bounds []float64) *histogramFamily {
		return &histogramFamily{name: "sessiond_" + name, help: help, histogram: newHistogram(bounds)}
	}
	m.starts = counter("session_starts_total", "Sessions started (their command spawned).")
	m.startFailures = counter("session_start_failures_total", "Sessions that failed to start (preflight, spawn, or a restart that could not be made).")
	m.restarts = counter("session_restarts_total", "Sessions restarted by their restart policy or by sessionctl restart.")
	m.warnings = counter("session_warnings_total", "Warnings given before a deadline.")
	m.ends = newCounterVec("sessiond_session_ends_total", "Sessions ended, by end reason.", "reason")
	for _, e := range ipc.Ends {
		m.ends.with(e.Reason)
	}
	m.warningLate = hist("warning_lateness_seconds", "How late the warning was given, after its scheduled time.", latenessBuckets)
	m.deadlineLate = hist("deadline_lateness_seconds", "How late a session's stop began, after its deadline.", latenessBuckets)
	m.handoff = hist("handoff_latency_seconds",
		"Time from a session's end (its exit, or the end of its stop) to its handoff on disk, the final checkpoint included.",
		[]float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10, 30})
	m.checkpoints = &histogramVec{name: "sessiond_checkpoint_duration_seconds",
		help:   "Time a checkpoint took, by outcome: made, unchanged (the tree equals the last checkpoint's) or failed.",
		label:  "outcome",
		bounds: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		by:     map[string]*histogram{}}
	for _, o := range []string{"made", "unchanged", "failed"} {
		m.checkpoints.with(o)
	}
	m.checkpointFailures = counter("checkpoint_failures_total", "Checkpoints that failed.")
	m.requests = newCounterVec("sessiond_api_requests_total",
		"API requests answered, by route (the route table's pattern) and HTTP status.", "route", "code")

	m.fams = []family{m.starts, m.startFailures, m.restarts, m.warnings, m.ends, m.warningLate, m.deadlineLate,
		m.handoff, m.checkpoints, m.checkpointFailures, m.requests}
	m.fams = append(m.fams, sessionFamilies(src)...)
	m.fams = append(m.fams, watchFamilies(src)...)
	m.fams = append(m.fams, &gauges{name: "sessiond_build_info", kind: "gauge",
		help: "The daemon's version, as a label; always 1.",
		read: func() []gaugeSample {
			return []gaugeSample{{labels: []string{"version"}, values: []string{src.Version}, v: 1}}
		}})
	m.fams = append(m.fams, runtimeFamilies()...)
	m.fams = append(m.fams, processFamilies()...)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_ = writeFamilies(w, m.fams)
	})
}

// Observe counts an event of the bus. It runs on the publisher's
// goroutine and does not block.
func (m *Metrics) Observe(ev ipc.Event) {
	switch ev.Type {
	case ipc.EventStarted:
		m.starts.c.Inc()
		if m.isRestart(ev) {
			m.restarts.c.Inc()
		}
	case ipc.EventFailed:
		m.startFailures.c.Inc()
	case ipc.EventWarned:
		rec, ok := m.session(ev)
		if ok && rec.Warning != nil && rec.Warning.Reason != "" && rec.Warning.Reason != ipc.WarnDeadline {
			return // a wait, a budget, ...: no deadline's warning
		}
		m.warnings.c.Inc()
		if ok && !rec.WarnAt.IsZero() {
			m.warningLate.Observe(late(ev.Time, rec.WarnAt))
		}
	case ipc.EventStopping:
		if rec, ok := m.session(ev); ok && rec.EndReason == ipc.EndTimeout && !rec.Deadline.IsZero() {
			m.deadlineLate.Observe(late(ev.Time, rec.Deadline))
		}
	case ipc.EventEnded:
		rec, ok := m.session(ev)
		if !ok {
			return
		}
		m.ends.with(rec.EndReason).Inc()
		if rec.EndedAt != nil && !rec.EndedAt.Before(m.src.Since) {
			m.handoff.Observe(late(ev.Time, *rec.EndedAt))
		}
	}
}

// isRestart reports whether a started event is of a restart, by the
// restart policy or sessionctl restart: a successor whose restart count
// is its predecessor's plus one (a usage limit's continuation keeps it).
// Only a start that has a predecessor is looked at further.
func (m *Metrics) isRestart(ev ipc.Event) bool {
	i := bytes.Index(ev.Data, []byte(`"restart_of":"`))
	if i < 0 || len(ev.Data) <= i+14 || ev.Data[i+14] == '"' {
		return false
	}
	var rec struct {
		RestartOf string `json:"restart_of"`
		Restarts  int    `json:"restarts"`
	}
	if json.Unmarshal(ev.Data, &rec) != nil || m.src.Session == nil {
		return false
	}
	prev, ok := m.src.Session(rec.RestartOf)
	return ok && rec.Restarts == prev.Restarts+1
}

func (m *Metrics) session(ev ipc.Event) (ipc.Session, bool) {
	if m.src.Session == nil || ev.SessionID == "" {
		return ipc.Session{}, false
	}
	return m.src.Session(ev.SessionID)
}

// late returns how long after due at was, in seconds (0 when early).
func late(at, due time.Time) float64 {
	return max(at.Sub(due), 0).Seconds()
}

// Checkpoint counts a checkpoint that took d: unchanged when it found
// the tree as the last checkpoint left it.
func (m *Metrics) Checkpoint(d time.Duration, unchanged bool, err error) {
	outcome := "made"
	switch {
	case err != nil:
		outcome = "failed"
		m.checkpointFailures.c.Inc()
	case unchanged:
		outcome = "unchanged"
	}
	m.checkpoints.with(outcome).Observe(d.Seconds())
}

// Request counts an API request answered with status on route (a pattern
// of the route table, "unmatched" or "refused").
func (m *Metrics) Request(route string, status int) {
	m.requests.with(route, strconv.Itoa(status)).Inc()
}
