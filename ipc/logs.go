package ipc

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// TimestampFormat is how `logs --timestamps` prints the time of a line:
// RFC 3339 in UTC with nanoseconds, fixed width (docker's format).
const TimestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// LogStampsHeader is the response header of GET /v1/sessions/{id}/logs
// when timestamps, since or until were asked for: how much of the log has
// times (LogStampsAll, LogStampsPartial or LogStampsNone).
const LogStampsHeader = "Sessiond-Log-Stamps"

// What LogStampsHeader says.
const (
	// LogStampsAll: every line sent has its time.
	LogStampsAll = "all"
	// LogStampsPartial: the log began before its times were kept (a
	// session adopted from an older daemon); its first lines have none.
	LogStampsPartial = "partial"
	// LogStampsNone: the log was written before sessiond kept times.
	LogStampsNone = "none"
)

// StampsReporter is implemented by the writer that Sessions.SessionLogs
// is given when the client can be told, before any output, how much of
// the log has times.
type StampsReporter interface {
	ReportStamps(coverage string)
}

// LogStream is a session's output as the daemon sends it.
type LogStream struct {
	io.ReadCloser
	// Stamps is the daemon's LogStampsHeader: empty unless timestamps,
	// since or until were asked for.
	Stamps string
}

// ParseLogTime reads a --since or --until value: a duration before now
// ("10m", "1h30m") or an RFC 3339 time ("2024-05-01T12:00:00Z", with or
// without fractions of a second).
func ParseLogTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("empty time: want a duration such as 10m or an RFC 3339 time such as 2024-05-01T12:00:00Z")
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: want a duration before now, not a negative one", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (10m, 2h) nor an RFC 3339 time (2024-05-01T12:00:00Z)", s)
	}
	return t, nil
}

// logTimeQuery adds the time options of a log request to its query.
func logTimeQuery(q url.Values, opt LogOptions) {
	if opt.Timestamps {
		q.Set("timestamps", "1")
	}
	if !opt.Since.IsZero() {
		q.Set("since", opt.Since.UTC().Format(time.RFC3339Nano))
	}
	if !opt.Until.IsZero() {
		q.Set("until", opt.Until.UTC().Format(time.RFC3339Nano))
	}
}
