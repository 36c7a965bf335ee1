package main

import (
	"strings"
	"testing"
	"time"
)

// TestSchedulerDeadline: the scheduler's deadline as whole seconds, a
// duration or an RFC 3339 time; anything else, or nothing, is an error
// that names the variable.
func TestSchedulerDeadline(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
		err   string
	}{
		{"14400", 4 * time.Hour, ""},
		{"2h30m", 150 * time.Minute, ""},
		{"2030-01-02T05:04:05Z", 2 * time.Hour, ""},
		{"2030-01-02T04:04:05+01:00", 0, ""},
		{"", 0, "not set"},
		{"soon", 0, `SCHED="soon": want seconds`},
		{"-5", 0, "want seconds"},
	} {
		t.Setenv("SCHED", tc.value)
		got, err := schedulerDeadline("SCHED", now)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one saying %q", tc.value, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.value, err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%q: %v, want %v", tc.value, got, tc.want)
		}
	}
}
