package state

import (
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)

func TestRestoreSummary(t *testing.T) {
	design := &SessionState{
		LastSession: &LastSession{
			Summary:   "Completed Task #27 (JWT refresh tokens)",
			Timestamp: testNow.Add(-2 * time.Hour),
			EndReason: "complete",
		},
		NextActions: []string{"Fix JWT validation in kong-gateway.ts"},
		ProgressPct: 68.5, TasksDone: 27, TasksTotal: 40,
	}
	blockers := fullState()
	blockers.ActiveBlockers = append(blockers.ActiveBlockers, Blocker{ID: 6, Question: "Is the\nstaging DB\tsafe to reset?"})
	tests := []struct {
		golden string
		state  *SessionState
	}{
		{"restore_design.txt", design},
		{"restore_blockers.txt", blockers},
		{"restore_emptyish.txt", &SessionState{ProgressPct: 12.9}},
		{"restore_nil.txt", nil},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			golden(t, tt.golden, []byte(RestoreSummary(tt.state, testNow)))
		})
	}
}

func TestRestoreSummaryMatchesDesign(t *testing.T) {
	// DESIGN §5.5, verbatim.
	const want = `📋 Restoring session...

Last Session:
  Summary: Completed Task #27 (JWT refresh tokens)
  Time: 2 hours ago

Next Actions:
  1. Fix JWT validation in kong-gateway.ts

Progress: 68% (27/40 tasks complete)
Blockers: None
`
	s := &SessionState{
		LastSession: &LastSession{Summary: "Completed Task #27 (JWT refresh tokens)", Timestamp: testNow.Add(-2*time.Hour - 10*time.Minute)},
		NextActions: []string{"Fix JWT validation in kong-gateway.ts"},
		ProgressPct: 68.5, TasksDone: 27, TasksTotal: 40,
	}
	if got := RestoreSummary(s, testNow); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	s.TasksTotal = 0
	if got, want := RestoreSummary(s, testNow), "Progress: 68%\n"; !strings.Contains(got, want) {
		t.Errorf("got:\n%s\nwant a line %q", got, want)
	}
}

func TestRelativeTime(t *testing.T) {
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{-time.Hour, "just now"},
		{0, "just now"},
		{59 * time.Second, "just now"},
		{time.Minute, "1 minute ago"},
		{5*time.Minute + 30*time.Second, "5 minutes ago"},
		{59 * time.Minute, "59 minutes ago"},
		{time.Hour, "1 hour ago"},
		{119 * time.Minute, "1 hour ago"},
		{2 * time.Hour, "2 hours ago"},
		{23 * time.Hour, "23 hours ago"},
		{24 * time.Hour, "yesterday"},
		{47 * time.Hour, "yesterday"},
		{48 * time.Hour, "2 days ago"},
		{400 * 24 * time.Hour, "400 days ago"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := RelativeTime(testNow.Add(-tt.ago), testNow); got != tt.want {
				t.Errorf("%v ago: got %q, want %q", tt.ago, got, tt.want)
			}
		})
	}
}
