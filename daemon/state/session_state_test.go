package state

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func fullState() *SessionState {
	return &SessionState{
		LastSession: &LastSession{
			Summary:        "Completed Task #27 (JWT refresh tokens)",
			CompletedTasks: []TaskID{IntTaskID(27), StringTaskID("auth-28")},
			Timestamp:      time.Date(2026, 11, 29, 8, 15, 0, 0, time.UTC),
			SessionID:      "k3f9a2",
			EndReason:      "timeout",
		},
		NextActions:    []string{"Fix JWT validation in kong-gateway.ts", "Add refresh token tests (Task #30)"},
		CurrentPlan:    "Implement OAuth 2.0 authentication with JWT tokens",
		ActiveBlockers: []Blocker{{ID: 5, Question: "Which OAuth provider should we use for SSO?", Priority: "high"}},
		ProgressPct:    68.5,
		TasksDone:      27,
		TasksTotal:     40,
	}
}

func TestSessionStateRoundTrip(t *testing.T) {
	old := setUmask(0o022)
	defer setUmask(old)
	project := t.TempDir()
	got, err := LoadSessionState(project)
	if got != nil || err != nil {
		t.Fatalf("before save: got %v, %v, want nil, nil", got, err)
	}
	want := fullState()
	if err := SaveSessionState(project, want); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, SessionStatePath(project)); m != 0o600 {
		t.Errorf("file mode: got %v, want %v", m, os.FileMode(0o600))
	}
	if m := mode(t, filepath.Join(project, DirName)); m != 0o700 {
		t.Errorf("dir mode: got %v, want %v", m, os.FileMode(0o700))
	}
	got, err = LoadSessionState(project)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	raw := readTestFile(t, SessionStatePath(project))
	for _, key := range []string{`"last_session"`, `"completed_tasks": [`, `    27,`, `"auth-28"`, `"next_actions"`, `"active_blockers"`, `"progress_pct": 68.5`, `"tasks_total": 40`} {
		if !strings.Contains(raw, key) {
			t.Errorf("file lacks %s:\n%s", key, raw)
		}
	}
	if err := ClearSessionState(project); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadSessionState(project); got != nil || err != nil {
		t.Errorf("after clear: got %v, %v, want nil, nil", got, err)
	}
	if err := ClearSessionState(project); err != nil {
		t.Errorf("clearing twice: got %v, want nil", err)
	}
}

func TestSessionStateEmptyListsWrittenAsArrays(t *testing.T) {
	project := t.TempDir()
	if err := SaveSessionState(project, &SessionState{}); err != nil {
		t.Fatal(err)
	}
	got := readTestFile(t, SessionStatePath(project))
	want := "{\n  \"next_actions\": [],\n  \"active_blockers\": [],\n  \"progress_pct\": 0\n}\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLoadSessionStateSeedFile(t *testing.T) {
	// The seed's own example, with its zone-less timestamp.
	seed := `{
  "last_session": {
    "summary": "Completed Task #27 (JWT refresh tokens), Task #28 (Add token validation)",
    "completed_tasks": [27, 28],
    "timestamp": "2025-11-20T10:30:00"
  },
  "next_actions": [
    "Fix JWT validation in kong-gateway.ts (Task #29)",
    "Add refresh token tests (Task #30)",
    "Update auth documentation (Task #31)"
  ],
  "current_plan": "Implement OAuth 2.0 authentication with JWT tokens",
  "active_blockers": [
    {
      "id": 5,
      "question": "Which OAuth provider should we use for SSO?",
      "priority": "high"
    }
  ],
  "progress_pct": 68.5
}`
	project := t.TempDir()
	writeTestFile(t, SessionStatePath(project), seed)
	s, err := LoadSessionState(project)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2025, 11, 20, 10, 30, 0, 0, time.Local)
	if got := s.LastSession.Timestamp; !got.Equal(want) {
		t.Errorf("timestamp: got %v, want %v", got, want)
	}
	if got, want := s.LastSession.CompletedTasks, []TaskID{IntTaskID(27), IntTaskID(28)}; !reflect.DeepEqual(got, want) {
		t.Errorf("completed tasks: got %v, want %v", got, want)
	}
	if got := len(s.NextActions); got != 3 {
		t.Errorf("next actions: got %d, want 3", got)
	}
}

func TestLoadSessionStateCorrupt(t *testing.T) {
	tests := []struct {
		name    string
		content string
	}{
		{"empty", ""},
		{"truncated", `{"last_session": {"summary": "half`},
		{"not JSON", "<html>502 Bad Gateway</html>"},
		{"wrong type progress", `{"progress_pct":"x"}`},
		{"wrong type actions", `{"next_actions":"do it"}`},
		{"wrong type task id", `{"last_session":{"completed_tasks":[true]}}`},
		{"bad timestamp", `{"last_session":{"timestamp":"yesterday"}}`},
		{"null", `null`},
		{"array", `[]`},
		{"progress out of range", `{"progress_pct":1e999}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project := t.TempDir()
			path := SessionStatePath(project)
			writeTestFile(t, path, tt.content)
			s, err := LoadSessionState(project)
			if s != nil {
				t.Errorf("got state %+v, want nil", s)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want an error matching ErrCorrupt", err)
			}
			kept := corruptCopies(t, path)
			if len(kept) != 1 {
				t.Fatalf("kept copies: got %v, want one", kept)
			}
			if got := readTestFile(t, kept[0]); got != tt.content {
				t.Errorf("kept content: got %q, want %q", got, tt.content)
			}
			// The next load is a clean start, and saving works again.
			if s, err := LoadSessionState(project); s != nil || err != nil {
				t.Errorf("second load: got %v, %v, want nil, nil", s, err)
			}
			if err := SaveSessionState(project, fullState()); err != nil {
				t.Errorf("save after corrupt: %v", err)
			}
		})
	}
}

func TestSessionStateBound(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) }
	tests := []struct {
		name  string
		in    SessionState
		check func(t *testing.T, s *SessionState)
	}{
		{"summary cut to 500 runes", SessionState{LastSession: &LastSession{Summary: long(600)}}, func(t *testing.T, s *SessionState) {
			if got := utf8.RuneCountInString(s.LastSession.Summary); got != MaxSummaryLen {
				t.Errorf("got %d runes, want %d", got, MaxSummaryLen)
			}
			if !strings.HasSuffix(s.LastSession.Summary, "…") || !utf8.ValidString(s.LastSession.Summary) {
				t.Errorf("got %q, want valid UTF-8 ending in …", s.LastSession.Summary[len(s.LastSession.Summary)-10:])
			}
		}},
		{"summary of exactly 500 kept", SessionState{LastSession: &LastSession{Summary: long(500)}}, func(t *testing.T, s *SessionState) {
			if got := s.LastSession.Summary; got != long(500) {
				t.Errorf("got %d runes changed, want it unchanged", utf8.RuneCountInString(got))
			}
		}},
		{"at most 5 next actions of 200", SessionState{NextActions: []string{"a", "", "  ", long(300), "c", "d", "e", "f"}}, func(t *testing.T, s *SessionState) {
			if got := len(s.NextActions); got != MaxNextActions {
				t.Errorf("got %d actions, want %d", got, MaxNextActions)
			}
			if got := utf8.RuneCountInString(s.NextActions[1]); got != MaxActionLen {
				t.Errorf("got %d runes, want %d", got, MaxActionLen)
			}
			if got, want := s.NextActions[4], "e"; got != want {
				t.Errorf("last action: got %q, want %q (empty ones dropped)", got, want)
			}
		}},
		{"plan cut to 2000", SessionState{CurrentPlan: long(2500)}, func(t *testing.T, s *SessionState) {
			if got := utf8.RuneCountInString(s.CurrentPlan); got != MaxPlanLen {
				t.Errorf("got %d, want %d", got, MaxPlanLen)
			}
		}},
		{"progress above 100", SessionState{ProgressPct: 250}, wantPct(100)},
		{"progress below 0", SessionState{ProgressPct: -3}, wantPct(0)},
		{"progress NaN", SessionState{ProgressPct: math.NaN()}, wantPct(0)},
		{"progress +Inf", SessionState{ProgressPct: math.Inf(1)}, wantPct(0)},
		{"progress kept", SessionState{ProgressPct: 68.5}, wantPct(68.5)},
		{"blockers bounded", SessionState{ActiveBlockers: func() []Blocker {
			var bs []Blocker
			for i := range 30 {
				bs = append(bs, Blocker{ID: i, Question: long(600), Priority: "high"})
			}
			return bs
		}()}, func(t *testing.T, s *SessionState) {
			if got := len(s.ActiveBlockers); got != MaxBlockers {
				t.Errorf("got %d blockers, want %d", got, MaxBlockers)
			}
			if got := utf8.RuneCountInString(s.ActiveBlockers[0].Question); got != MaxQuestionLen {
				t.Errorf("got %d runes, want %d", got, MaxQuestionLen)
			}
		}},
		{"task counts", SessionState{TasksDone: 50, TasksTotal: 40}, func(t *testing.T, s *SessionState) {
			if s.TasksDone != 40 {
				t.Errorf("got %d done, want 40", s.TasksDone)
			}
		}},
		{"invalid UTF-8 replaced", SessionState{NextActions: []string{"a\xffb"}}, func(t *testing.T, s *SessionState) {
			if got, want := s.NextActions[0], "a\uFFFDb"; got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		}},
		{"nil lists become empty", SessionState{LastSession: &LastSession{}}, func(t *testing.T, s *SessionState) {
			if s.NextActions == nil || s.ActiveBlockers == nil || s.LastSession.CompletedTasks == nil {
				t.Errorf("got %+v, want non-nil lists", s)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.in
			BoundSessionState(&s)
			tt.check(t, &s)
			if _, err := json.Marshal(&s); err != nil {
				t.Errorf("marshal after Bound: %v", err)
			}
		})
	}
}

func wantPct(want float64) func(t *testing.T, s *SessionState) {
	return func(t *testing.T, s *SessionState) {
		if s.ProgressPct != want {
			t.Errorf("got %v, want %v", s.ProgressPct, want)
		}
	}
}
