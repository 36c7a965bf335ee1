package session

import (
	"strings"
	"testing"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

func TestProjectViewRecomputesFromTheFeatureList(t *testing.T) {
	four := `[{"id":"F1","description":"a","passes":true},{"id":"F2","description":"b","passes":%s},
		{"id":"F3","description":"c","passes":%s},{"id":"F4","description":"d","passes":%s}]`
	all := features(t, strings.ReplaceAll(strings.ReplaceAll(four, "%s", "true"), "\n", ""))
	st := buildSessionState(&accountInput{Rec: ipc.Session{ID: "s1"}, Reason: Complete, Features: all, FeaturesAtStart: all}, &state.Handoff{})
	if st.TasksDone != 4 {
		t.Fatalf("state = %+v", st)
	}
	st.LastRestore = &state.Restore{Checkpoint: "a1b2c3d4e5f6a7b8", At: t0.Add(1e9 * 3600)}
	st.LastSession.Timestamp = t0
	// The work tree is restored: F2–F4 no longer pass.
	now := features(t, strings.Replace(strings.Replace(strings.Replace(four, "%s", "false", 1), "%s", "false", 1), "%s", "false", 1))
	v, notes := ProjectView(st, now, nil)
	if v.TasksDone != 1 || v.TasksTotal != 4 || v.ProgressPct != 25 {
		t.Errorf("progress = %d/%d %v%%, want 1/4 25%%", v.TasksDone, v.TasksTotal, v.ProgressPct)
	}
	if len(v.NextActions) == 0 || v.NextActions[0] != "b (Task #F2)" {
		t.Errorf("next = %v, want F2 first", v.NextActions)
	}
	if len(notes) != 1 || notes[0] != "feature list changed since the last session: F2, F3, F4 no longer pass (checkpoint a1b2c3d4e5f6 restored)" {
		t.Errorf("notes = %q", notes)
	}
	if st.TasksDone != 4 {
		t.Error("the stored state was changed")
	}
	summary := state.RestoreSummary(v, t0.Add(2*3600e9), notes...)
	if strings.Contains(summary, "100%") || !strings.Contains(summary, "Progress: 25% (1/4 tasks complete)") || !strings.Contains(summary, "no longer pass") {
		t.Errorf("summary contradicts the feature list:\n%s", summary)
	}
	// Next actions the agent gave stay.
	st.NextActions, st.NextFrom = []string{"fix the flaky test"}, state.NextFromReport
	if v, _ := ProjectView(st, now, nil); v.NextActions[0] != "fix the flaky test" {
		t.Errorf("the agent's next actions were replaced: %v", v.NextActions)
	}
}

func TestApplyBlockers(t *testing.T) {
	open, resolved, seq, err := ApplyBlockers(nil, nil, 4, ipc.Report{Blockers: []string{"db?", "port?"}})
	if err != nil || len(open) != 2 || open[0].ID != 5 || open[1].ID != 6 || seq != 6 || len(resolved) != 0 {
		t.Fatalf("add: %v %v %d %v", open, resolved, seq, err)
	}
	open2, resolved2, _, err := ApplyBlockers(open, resolved, seq, ipc.Report{Resolve: []string{"5"}})
	if err != nil || len(open2) != 1 || open2[0].ID != 6 || len(resolved2) != 1 || resolved2[0].ID != 5 {
		t.Errorf("resolve 5: %v %v %v", open2, resolved2, err)
	}
	if len(open) != 2 {
		t.Error("the lists given were changed")
	}
	if _, _, _, err := ApplyBlockers(open2, resolved2, seq, ipc.Report{Resolve: []string{"5"}}); err == nil || !strings.Contains(err.Error(), "no open blocker #5") {
		t.Errorf("resolve of a resolved one: %v", err)
	}
	if open3, resolved3, _, err := ApplyBlockers(open, nil, seq, ipc.Report{Resolve: []string{"all"}}); err != nil || len(open3) != 0 || len(resolved3) != 2 {
		t.Errorf("resolve all: %v %v %v", open3, resolved3, err)
	}
}
