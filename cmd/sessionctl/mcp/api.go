package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// API is sessiond as the server sees it through the daemon's API: the
// Daemon of `sessionctl mcp`.
func API(c *ipc.Client) Daemon { return apiDaemon{c: c} }

type apiDaemon struct{ c *ipc.Client }

func (d apiDaemon) Remaining(ctx context.Context, id string) (Remaining, error) {
	rec, err := d.c.Session(ctx, id)
	if err != nil {
		return Remaining{}, err
	}
	r := Remaining{State: rec.State, Deadline: rec.Deadline, WarnAt: rec.WarnAt, Warned: rec.State == ipc.StateWarned}
	if left := time.Until(rec.Deadline); left > 0 && !rec.Deadline.IsZero() {
		r.Left = left.Round(time.Second)
	}
	if s := rec.Spec; s != nil {
		r.ExtendCap = s.AgentMayExtend.Duration
		r.Budget.MaxTokens, r.Budget.MaxCostUSD = s.MaxTokens, s.MaxCostUSD
	}
	r.ExtendLeft = r.ExtendCap
	if a := rec.Agent; a != nil {
		r.ExtendLeft = max(r.ExtendCap-time.Duration(a.ExtendedSeconds)*time.Second, 0)
	}
	if t := rec.Tokens; t != nil {
		r.Budget.Tokens, r.Budget.CostUSD, r.Budget.CostKnown = t.Total(), t.CostUSD, t.CostKnown
	}
	return r, nil
}

func (d apiDaemon) Report(ctx context.Context, id string, r Report) (ReportResult, error) {
	rep := ipc.Report{Summary: r.Summary, Next: r.Next, Plan: r.Plan, Progress: r.Progress, Task: r.Task, Status: r.Status}
	if r.StepTotal > 0 {
		rep.Step = fmt.Sprintf("%d/%d", r.StepCurrent, r.StepTotal)
	}
	for _, b := range r.BlockersAdd {
		rep.Blockers = append(rep.Blockers, b.Question)
	}
	for _, n := range r.BlockersResolve {
		rep.Resolve = append(rep.Resolve, strconv.Itoa(n))
	}
	if _, err := d.c.Report(ctx, id, rep); err != nil {
		return ReportResult{}, err
	}
	rec, err := d.c.Session(ctx, id)
	if err != nil {
		return ReportResult{}, err
	}
	return ReportResult{Blockers: blockersOf(rec.Blockers)}, nil
}

func (d apiDaemon) Checkpoint(ctx context.Context, id string) (Checkpoint, error) {
	r, err := d.c.Checkpoint(ctx, id)
	if err != nil {
		return Checkpoint{}, err
	}
	if r.Skipped {
		return Checkpoint{Skipped: fmt.Sprintf("nothing changed since checkpoint %.12s", r.ID)}, nil
	}
	return Checkpoint{ID: r.ID, FilesChanged: r.FilesChanged, Message: r.Summary}, nil
}

func (d apiDaemon) Briefing(ctx context.Context, id string) (Briefing, error) {
	br, err := d.c.Briefing(ctx, id)
	if err != nil {
		return Briefing{}, err
	}
	b := Briefing{Blockers: blockersOf(br.Blockers), NextActions: br.NextActions,
		ProgressPct: br.ProgressPct, TasksDone: br.TasksDone, TasksTotal: br.TasksTotal}
	if t := br.NextTask; t != nil {
		b.NextTask = &Task{ID: t.ID, Description: t.Description, Priority: t.Priority}
	}
	if h := br.Previous; h != nil {
		b.Previous = &Handoff{
			SessionID: h.SessionID, EndedAt: h.EndedAt, EndReason: h.EndReason, Summary: br.Summary,
			TaskAttempted: h.TaskAttempted, TaskStatus: h.TaskStatus, BlockedReason: h.BlockedReason,
			RecommendedNextSteps: h.RecommendedNextSteps, Warnings: h.Warnings, UncommittedFiles: h.UncommittedFiles,
		}
		if h.TotalSteps > 0 {
			b.Previous.CurrentStep = fmt.Sprintf("%d/%d", h.CurrentStep, h.TotalSteps)
		}
		if h.Agent != nil {
			b.Previous.ConversationID = h.Agent.ConversationID
		}
	}
	return b, nil
}

func (d apiDaemon) Extend(ctx context.Context, id string, by time.Duration) (Extension, error) {
	rec, err := d.c.AgentExtend(ctx, id, by.String())
	if err != nil {
		if errors.Is(err, ipc.ErrConflict) {
			return Extension{}, fmt.Errorf("%w: %v", ErrExtendRefused, err)
		}
		return Extension{}, err
	}
	x := Extension{Deadline: rec.Deadline, Left: max(time.Until(rec.Deadline), 0).Round(time.Second)}
	if rec.Spec != nil && rec.Agent != nil {
		x.ExtendLeft = max(rec.Spec.AgentMayExtend.Duration-time.Duration(rec.Agent.ExtendedSeconds)*time.Second, 0)
	}
	return x, nil
}

func blockersOf(bs []ipc.Blocker) []Blocker {
	out := make([]Blocker, 0, len(bs))
	for _, b := range bs {
		out = append(out, Blocker{ID: b.ID, Question: b.Question, Priority: b.Priority})
	}
	return out
}
