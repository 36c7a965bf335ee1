package server

import (
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// logTimes reads the time options of a log request: timestamps=1, and
// since and until as RFC 3339 times or durations before now.
func logTimes(q url.Values, now time.Time) (ipc.LogOptions, error) {
	var opt ipc.LogOptions
	var err error
	if opt.Timestamps, err = boolParam(q.Get("timestamps"), "timestamps"); err != nil {
		return opt, err
	}
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"since", &opt.Since}, {"until", &opt.Until}} {
		if v := q.Get(p.name); v != "" {
			if *p.to, err = ipc.ParseLogTime(v, now); err != nil {
				return opt, ipc.BadRequest("%s: %v", p.name, err)
			}
		}
	}
	if !opt.Since.IsZero() && !opt.Until.IsZero() && opt.Until.Before(opt.Since) {
		return opt, ipc.BadRequest("until (%s) is before since (%s)", opt.Until.Format(time.RFC3339), opt.Since.Format(time.RFC3339))
	}
	return opt, nil
}

// logWriter is the writer a log stream's backend gets: the status line and
// headers go out with the first output, or as soon as the backend reports
// the log's stamps, so that an error found before any output is answered
// as an error.
type logWriter struct {
	w      http.ResponseWriter
	stream *StreamWriter
	mu     sync.Mutex
	sent   bool
}

func newLogWriter(w http.ResponseWriter, stream *StreamWriter) *logWriter {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	return &logWriter{w: w, stream: stream}
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.begin()
	return l.stream.Write(p)
}

// ReportStamps implements ipc.StampsReporter.
func (l *logWriter) ReportStamps(coverage string) {
	l.mu.Lock()
	if !l.sent {
		l.w.Header().Set(ipc.LogStampsHeader, coverage)
	}
	l.mu.Unlock()
	l.begin()
	_ = http.NewResponseController(l.w).Flush()
}

// begin sends the status line and headers once.
func (l *logWriter) begin() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.sent {
		l.sent = true
		l.w.WriteHeader(http.StatusOK)
	}
}

// started reports whether the headers went out.
func (l *logWriter) started() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}
