package session

import (
	"fmt"
	"math"
	"strings"

	"github.com/sessiond/sessiond/daemon/state"
)

// ProjectView is a project's state as it stands now: the stored state with
// its progress (and its next actions, when they came from the feature
// list) recomputed from the feature list as it is on disk, and notes that
// say what changed since the state was written — a feature list moved by
// hand or by a restore. What `sessionctl start` and `state` print and what
// context.md says all come from it, so that none contradicts another. A
// nil state stays nil; an unreadable feature list leaves the state as it
// was.
func ProjectView(st *state.SessionState, feats []state.Feature, ferr error) (*state.SessionState, []string) {
	if st == nil || ferr != nil || len(feats) == 0 {
		return st, nil
	}
	v := *st
	p := state.Progress(feats)
	v.ProgressPct, v.TasksDone, v.TasksTotal = math.Round(p.Pct*10)/10, p.Done, p.Total
	if st.NextFrom == state.NextFromFeatures {
		v.NextActions = nil
		for _, f := range state.NextTasks(feats, nextLimit) {
			v.NextActions = append(v.NextActions, featureLine(f))
		}
	}
	var notes []string
	if change := featureChange(st, feats); change != "" {
		if r := st.LastRestore; r != nil && (st.LastSession == nil || r.At.After(st.LastSession.Timestamp)) {
			change += fmt.Sprintf(" (checkpoint %.12s restored)", r.Checkpoint)
		}
		notes = append(notes, "feature list changed since the last session: "+change)
	}
	return &v, notes
}

// featureChange says which features pass now that did not when the state
// was written, and which no longer do; "" when none changed.
func featureChange(st *state.SessionState, feats []state.Feature) string {
	if st.PassingTasks == nil {
		if st.TasksTotal > 0 && st.TasksDone != state.Progress(feats).Done {
			p := state.Progress(feats)
			return fmt.Sprintf("%d of %d pass now, %d of %d then", p.Done, p.Total, st.TasksDone, st.TasksTotal)
		}
		return ""
	}
	was := map[string]bool{}
	for _, id := range st.PassingTasks {
		was[id.String()] = true
	}
	var lost, gained []string
	for _, f := range feats {
		k := f.Key()
		if k.IsZero() {
			continue
		}
		switch {
		case was[k.String()] && !f.Passes:
			lost = append(lost, k.String())
		case !was[k.String()] && f.Passes:
			gained = append(gained, k.String())
		}
	}
	var parts []string
	if len(lost) > 0 {
		parts = append(parts, strings.Join(lost, ", ")+" no longer "+passVerb(len(lost)))
	}
	if len(gained) > 0 {
		parts = append(parts, strings.Join(gained, ", ")+" now "+passVerb(len(gained)))
	}
	return strings.Join(parts, "; ")
}

func passVerb(n int) string {
	if n == 1 {
		return "passes"
	}
	return "pass"
}
