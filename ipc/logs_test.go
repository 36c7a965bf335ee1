package ipc

import (
	"strings"
	"testing"
	"time"
)

func TestParseLogTime(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in, want, err string
	}{
		{"10m", "2030-01-02T02:54:05Z", ""},
		{" 1h30m ", "2030-01-02T01:34:05Z", ""},
		{"0s", "2030-01-02T03:04:05Z", ""},
		{"2029-12-31T23:00:00Z", "2029-12-31T23:00:00Z", ""},
		{"2029-12-31T23:00:00.5+01:00", "2029-12-31T22:00:00.5Z", ""},
		{"", "", "empty time"},
		{"-1h", "", "negative"},
		{"yesterday", "", "neither a duration"},
		{"2029-12-31", "", "neither a duration"},
	} {
		got, err := ParseLogTime(tc.in, now)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseLogTime(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.UTC().Format(time.RFC3339Nano) != tc.want {
			t.Errorf("ParseLogTime(%q) = %v, %v; want %s", tc.in, got.UTC().Format(time.RFC3339Nano), err, tc.want)
		}
	}
	if got := now.Add(123456789 * time.Nanosecond).Format(TimestampFormat); got != "2030-01-02T03:04:05.123456789Z" {
		t.Errorf("TimestampFormat gives %q", got)
	}
	if got := now.Format(TimestampFormat); len(got) != len("2030-01-02T03:04:05.000000000Z") {
		t.Errorf("TimestampFormat is not of fixed width: %q", got)
	}
}
