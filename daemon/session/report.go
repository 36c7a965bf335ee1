package session

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Report limits (the seed's).
const (
	maxSummary  = 500
	maxNext     = 5
	maxItemLen  = 200
	maxPlan     = 2000
	maxBlockers = 20
)

// CleanReport checks a report and bounds its fields: what the agent may
// tell is limited in size, and a malformed field is an error naming it.
func CleanReport(rep ipc.Report) (ipc.Report, error) {
	if rep.Progress != nil && (math.IsNaN(*rep.Progress) || *rep.Progress < 0 || *rep.Progress > 100) {
		return rep, ipc.BadRequest("progress: want a percentage from 0 to 100, got %v", *rep.Progress)
	}
	switch rep.Status {
	case "", state.TaskCompleted, state.TaskInProgress, state.TaskBlocked, state.TaskFailed:
	default:
		return rep, ipc.BadRequest("status: %q is not one of completed, in_progress, blocked, failed", rep.Status)
	}
	if rep.Step != "" {
		var cur, tot int
		if n, _ := fmt.Sscanf(rep.Step, "%d/%d", &cur, &tot); n != 2 || cur < 0 || tot <= 0 || cur > tot {
			return rep, ipc.BadRequest("step: want N/M such as 3/5, got %q", rep.Step)
		}
	}
	// What the agent says is stored escaped (no terminal sequence reaches a
	// file or a terminal raw); a NUL byte is refused, naming the field.
	for _, f := range []struct {
		name string
		v    *string
	}{{"summary", &rep.Summary}, {"plan", &rep.Plan}, {"task", &rep.Task}, {"last_action", &rep.LastAction}, {"step", &rep.Step}} {
		v, err := state.StoreText(f.name, *f.v)
		if err != nil {
			return rep, ipc.BadRequest("%w", err)
		}
		*f.v = v
	}
	for _, l := range []struct {
		name string
		v    []string
	}{{"next", rep.Next}, {"blockers", rep.Blockers}} {
		for i, item := range l.v {
			v, err := state.StoreText(fmt.Sprintf("%s[%d]", l.name, i), item)
			if err != nil {
				return rep, ipc.BadRequest("%w", err)
			}
			l.v[i] = v
		}
	}
	for _, r := range rep.Resolve {
		if r == "all" {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(r, "#")); err != nil || n <= 0 {
			return rep, ipc.BadRequest("resolve: %q is not a blocker id (a number, as sessionctl state lists them) or \"all\"", r)
		}
	}
	rep.Summary = clip(rep.Summary, maxSummary)
	rep.Plan = clip(rep.Plan, maxPlan)
	rep.Task = clip(rep.Task, maxItemLen)
	rep.LastAction = clip(rep.LastAction, maxItemLen)
	rep.Next = clipList(rep.Next, maxNext, maxItemLen)
	rep.Blockers = clipList(rep.Blockers, maxBlockers, maxSummary)
	return rep, nil
}

// MergeReport lays the fields a report gives over the earlier ones.
func MergeReport(old, rep ipc.Report) ipc.Report {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&old.Summary, rep.Summary)
	set(&old.Plan, rep.Plan)
	set(&old.Task, rep.Task)
	set(&old.Step, rep.Step)
	set(&old.Status, rep.Status)
	set(&old.LastAction, rep.LastAction)
	if rep.Next != nil {
		old.Next = rep.Next
	}
	if rep.Progress != nil {
		old.Progress = rep.Progress
	}
	old.At = rep.At
	return old
}

// report records a report from a process of the session.
func (s *Session) report(m *reportRequest) (ipc.Report, error) {
	if !m.root && !s.owns(m.pid) {
		return ipc.Report{}, ipc.Forbidden("the reporting process (pid %d) is not part of session %s: sessionctl report runs from inside the session", m.pid, s.id)
	}
	rep := m.report
	rep.At = s.deps.Clock.Now()
	open, resolved, seq, err := ApplyBlockers(s.rec.Blockers, s.rec.ResolvedBlockers, s.rec.BlockerSeq, rep)
	if err != nil {
		return ipc.Report{}, err
	}
	s.rec.Blockers, s.rec.ResolvedBlockers, s.rec.BlockerSeq = open, resolved, seq
	rep.Blockers, rep.Resolve = nil, nil
	old := ipc.Report{}
	if s.rec.Report != nil {
		old = *s.rec.Report
	}
	merged := MergeReport(old, rep)
	s.rec.Report = &merged
	_ = s.commit()
	return merged, nil
}

// ApplyBlockers adds a report's questions as blockers with new ids and
// resolves those it names ("all": every open one). An id that is not open
// is an error naming it. The lists given are not changed.
func ApplyBlockers(open, resolved []ipc.Blocker, seq int, rep ipc.Report) ([]ipc.Blocker, []ipc.Blocker, int, error) {
	open, resolved = slices.Clone(open), slices.Clone(resolved)
	for _, r := range rep.Resolve {
		if r == "all" {
			resolved = append(resolved, open...)
			open = open[:0]
			continue
		}
		id, _ := strconv.Atoi(strings.TrimPrefix(r, "#"))
		i := slices.IndexFunc(open, func(b ipc.Blocker) bool { return b.ID == id })
		if i < 0 {
			return nil, nil, 0, ipc.BadRequest("resolve: no open blocker #%d (sessionctl state lists them)", id)
		}
		resolved = append(resolved, open[i])
		open = slices.Delete(open, i, i+1)
	}
	for _, q := range rep.Blockers {
		if len(open) >= maxBlockers {
			return nil, nil, 0, ipc.Conflict("blockers: %d are open already; resolve some first (--resolve ID)", maxBlockers)
		}
		seq++
		open = append(open, ipc.Blocker{ID: seq, Question: q, Priority: "high"})
	}
	return open, resolved, seq, nil
}

func clip(s string, max int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func clipList(l []string, n, max int) []string {
	if l == nil {
		return nil
	}
	out := []string{}
	for _, v := range l {
		if v = clip(v, max); v != "" && len(out) < n {
			out = append(out, v)
		}
	}
	return out
}
