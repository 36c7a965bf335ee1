package session

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

func features(t *testing.T, src string) []state.Feature {
	t.Helper()
	f, err := state.ParseFeatures([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTaskStatus(t *testing.T) {
	tests := []struct {
		reason Reason
		rep    ipc.Report
		want   string
	}{
		{Complete, ipc.Report{}, state.TaskCompleted},
		{Error, ipc.Report{}, state.TaskFailed},
		{Timeout, ipc.Report{}, state.TaskInProgress},
		{Crashed, ipc.Report{}, state.TaskInProgress},
		{Error, ipc.Report{Status: state.TaskCompleted}, state.TaskCompleted},
		{Complete, ipc.Report{Status: "bogus"}, state.TaskCompleted},
	}
	for _, tt := range tests {
		if got := taskStatus(tt.reason, tt.rep); got != tt.want {
			t.Errorf("taskStatus(%s, %+v) = %s, want %s", tt.reason, tt.rep, got, tt.want)
		}
	}
}

func TestParseStep(t *testing.T) {
	for in, want := range map[string][2]int{"": {0, 0}, "3/5": {3, 5}, " 2 / 4 ": {2, 4}, "x": {0, 0}} {
		if c, tot := parseStep(in); c != want[0] || tot != want[1] {
			t.Errorf("parseStep(%q) = %d/%d, want %v", in, c, tot, want)
		}
	}
}

func sampleInput(t *testing.T) accountInput {
	code := 0
	return accountInput{
		Rec: ipc.Session{ID: "s1", ProjectDir: "/p", Command: []string{"agent"}, StartedAt: t0, ExitCode: &code,
			FilesChanged: []string{"a.go", "b.go"}, Warnings: []string{"a checkpoint failed"}},
		Spec:   config.Spec{Timeout: config.Duration{Duration: time.Hour}},
		Reason: Complete,
		FeaturesAtStart: features(t, `[{"id":1,"description":"login","passes":true},{"id":2,"description":"logout","passes":false},
			{"id":3,"description":"reset","passes":false}]`),
		Features: features(t, `[{"id":1,"description":"login","passes":true},{"id":2,"description":"logout","passes":true},
			{"id":3,"description":"reset","passes":false}]`),
		Now: t0.Add(42 * time.Minute),
	}
}

func TestBuildHandoff(t *testing.T) {
	in := sampleInput(t)
	in.Git = &checkpoint.GitFacts{IsRepo: true, Head: "abc", Branch: "main", Uncommitted: []string{"a.go"}}
	h := buildHandoff(&in)
	if h.TaskStatus != state.TaskCompleted || h.TaskAttempted != "logout" {
		t.Errorf("task = %q %s, want the next task at the start, completed", h.TaskAttempted, h.TaskStatus)
	}
	if len(h.RecommendedNextSteps) != 1 || h.RecommendedNextSteps[0] != "reset (Task #3)" {
		t.Errorf("next steps = %v, want the feature list's next", h.RecommendedNextSteps)
	}
	if h.GitBranch != "main" || !strings.Contains(strings.Join(h.Warnings, "|"), "1 uncommitted file") {
		t.Errorf("git facts not in the handoff: %+v", h)
	}

	in.Reason = Timeout
	in.Report = ipc.Report{Task: "reset", Step: "2/4", Next: []string{"finish reset"}}
	in.Rec.Blockers, in.Rec.BlockerSeq = []ipc.Blocker{{ID: 1, Question: "which cookie?", Priority: "high"}}, 1
	h = buildHandoff(&in)
	if h.TaskStatus != state.TaskBlocked || h.CurrentStep != 2 || h.TotalSteps != 4 || !h.BlockedNeedsHuman || h.BlockedReason != "which cookie? (#1)" {
		t.Errorf("reported task = %+v", h)
	}
	if len(h.RecommendedNextSteps) != 1 || h.RecommendedNextSteps[0] != "finish reset" {
		t.Errorf("next steps = %v, want the report's", h.RecommendedNextSteps)
	}
	if !strings.Contains(strings.Join(h.Warnings, "|"), "hit its deadline (1h0m0s)") {
		t.Errorf("timeout warning missing: %v", h.Warnings)
	}
}

func TestBuildSessionState(t *testing.T) {
	in := sampleInput(t)
	h := buildHandoff(&in)
	st := buildSessionState(&in, h)
	if st.LastSession == nil || st.LastSession.SessionID != "s1" || len(st.LastSession.CompletedTasks) != 1 || st.LastSession.CompletedTasks[0].String() != "2" {
		t.Fatalf("last session = %+v", st.LastSession)
	}
	if !strings.HasPrefix(st.LastSession.Summary, "Completed Task #2 (logout); session s1 ended complete (exit 0) after 42m0s") {
		t.Errorf("automatic summary = %q", st.LastSession.Summary)
	}
	if st.TasksDone != 2 || st.TasksTotal != 3 || st.ProgressPct != 66.7 {
		t.Errorf("progress = %d/%d %v", st.TasksDone, st.TasksTotal, st.ProgressPct)
	}
	if len(st.NextActions) != 1 || st.NextActions[0] != "reset (Task #3)" {
		t.Errorf("next actions = %v", st.NextActions)
	}

	// The precedence of what is next: this session's report, then the
	// feature list as it is now, then the previous state.
	in.Previous = &state.SessionState{NextActions: []string{"keep me"}, NextFrom: state.NextFromReport}
	if st := buildSessionState(&in, buildHandoff(&in)); len(st.NextActions) != 1 || st.NextActions[0] != "reset (Task #3)" || st.NextFrom != state.NextFromFeatures {
		t.Errorf("next actions without a report = %v (%s), want the feature list's", st.NextActions, st.NextFrom)
	}
	in.FeaturesErr = errors.New("unreadable")
	if st := buildSessionState(&in, buildHandoff(&in)); len(st.NextActions) != 1 || st.NextActions[0] != "keep me" {
		t.Errorf("next actions without a report or a feature list = %v, want the previous ones", st.NextActions)
	}
	in.FeaturesErr = nil
	in.Report = ipc.Report{Summary: "did it", Next: []string{"n1", "n2"}}
	in.Rec.Blockers, in.Rec.BlockerSeq = []ipc.Blocker{{ID: 3, Question: "q3", Priority: "high"}}, 3
	st = buildSessionState(&in, buildHandoff(&in))
	if st.LastSession.Summary != "did it" || len(st.NextActions) != 2 || st.NextFrom != state.NextFromReport || len(st.ActiveBlockers) != 1 || st.ActiveBlockers[0].ID != 3 || st.BlockerSeq != 3 {
		t.Errorf("state after a report = %+v", st)
	}
	if in.Previous.NextActions[0] != "keep me" {
		t.Error("the previous state was changed")
	}
	if got := fmt.Sprint(st.PassingTasks); got != "[1 2]" {
		t.Errorf("passing tasks = %s, want [1 2]", got)
	}

	// An unreadable feature list leaves progress to the report.
	p := 40.0
	in.FeaturesErr, in.Report.Progress = errors.New("bad"), &p
	if st := buildSessionState(&in, buildHandoff(&in)); st.ProgressPct != 40 {
		t.Errorf("progress from the report = %v, want 40", st.ProgressPct)
	}
}

// TestASessionThatDidNothing keeps the last meaningful summary and counts
// the runs since.
func TestASessionThatDidNothing(t *testing.T) {
	in := sampleInput(t)
	prev := &state.SessionState{LastSession: &state.LastSession{Summary: "Ran out of time during F4 work", SessionID: "s0"},
		NextActions: []string{"finish F4"}, NextFrom: state.NextFromReport}
	in.Previous = prev
	in.Rec.FilesChanged = nil
	in.FeaturesAtStart = in.Features // nothing turned passing
	in.FeaturesErr = errors.New("no feature list")
	for i := 1; i <= 2; i++ {
		in.Rec.ID = fmt.Sprintf("idle%d", i)
		st := buildSessionState(&in, buildHandoff(&in))
		if st.LastSession.Summary != "Ran out of time during F4 work" || st.SessionsSince != i || len(st.RecentRuns) != i {
			t.Fatalf("run %d: state = %+v (last %+v)", i, st, st.LastSession)
		}
		if st.NextActions[0] != "finish F4" {
			t.Errorf("next actions = %v", st.NextActions)
		}
		in.Previous = st
	}
	// A session that reports resets the count.
	in.Report = ipc.Report{Summary: "did F4"}
	if st := buildSessionState(&in, buildHandoff(&in)); st.LastSession.Summary != "did F4" || st.SessionsSince != 0 || st.RecentRuns != nil {
		t.Errorf("after a report: %+v", st)
	}
}

// TestCompletedTaskIsNotInProgress: a task that turned passing appears
// under Completed only, even with an agent's step report.
func TestCompletedTaskIsNotInProgress(t *testing.T) {
	in := sampleInput(t)
	in.Reason = Timeout
	in.Report = ipc.Report{Task: "logout", Step: "4/4"}
	h := buildHandoff(&in)
	e := buildProgressEntry(&in, h)
	if h.TaskStatus != state.TaskCompleted || len(e.InProgress) != 0 || len(e.Completed) != 1 {
		t.Errorf("status %s, completed %v, in progress %v", h.TaskStatus, e.Completed, e.InProgress)
	}
}

func TestBuildProgressEntry(t *testing.T) {
	in := sampleInput(t)
	in.Reason = Error
	code := 2
	in.Rec.ExitCode = &code
	in.Report = ipc.Report{Summary: "tried", Task: "reset", Step: "1/3"}
	e := buildProgressEntry(&in, buildHandoff(&in))
	if len(e.Completed) != 1 || e.Completed[0] != "logout (Task #2)" {
		t.Errorf("completed = %v", e.Completed)
	}
	if len(e.InProgress) != 1 || e.InProgress[0] != "reset (step 1/3)" {
		t.Errorf("in progress = %v", e.InProgress)
	}
	notes := strings.Join(e.Notes, "|")
	if !strings.Contains(notes, "tried") || !strings.Contains(notes, "Ended: error (exit 2); 2 files changed") || !strings.Contains(notes, "the command failed (error (exit 2))") {
		t.Errorf("notes = %v", e.Notes)
	}
}
