package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/cmd/sessionctl/mcp"
	"github.com/sessiond/sessiond/ipc"
)

func (a *app) mcpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "An MCP server on stdio with the session's tools, for the agent",
		Long: "An MCP (Model Context Protocol) server on stdin/stdout that gives the agent of the session\n" +
			"named by SESSIOND_SESSION_ID its tools: time_remaining, report, checkpoint, handoff and, when the\n" +
			"spec grants agent_may_extend, extend. sessiond passes it to Claude Code and Codex itself; see\n" +
			"docs/agents.md to add it to another MCP client.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			return mcp.ServeStdio(cmd.Context(), mcpDaemon{c: a.client}, mcp.Options{
				SessionID: os.Getenv("SESSIOND_SESSION_ID"), Version: version, Logger: log,
			})
		},
	}
}

// mcpDaemon is sessiond as the MCP server sees it, through the API.
type mcpDaemon struct{ c *ipc.Client }

var _ mcp.Daemon = mcpDaemon{}

func (d mcpDaemon) Remaining(ctx context.Context, id string) (mcp.Remaining, error) {
	rec, err := d.c.Session(ctx, id)
	if err != nil {
		return mcp.Remaining{}, err
	}
	r := mcp.Remaining{State: rec.State, Deadline: rec.Deadline, WarnAt: rec.WarnAt, Warned: rec.State == ipc.StateWarned}
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

func (d mcpDaemon) Report(ctx context.Context, id string, r mcp.Report) (mcp.ReportResult, error) {
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
		return mcp.ReportResult{}, err
	}
	rec, err := d.c.Session(ctx, id)
	if err != nil {
		return mcp.ReportResult{}, err
	}
	return mcp.ReportResult{Blockers: mcpBlockers(rec.Blockers)}, nil
}

func (d mcpDaemon) Checkpoint(ctx context.Context, id string) (mcp.Checkpoint, error) {
	r, err := d.c.Checkpoint(ctx, id)
	if err != nil {
		return mcp.Checkpoint{}, err
	}
	if r.Skipped {
		return mcp.Checkpoint{Skipped: fmt.Sprintf("nothing changed since checkpoint %.12s", r.ID)}, nil
	}
	return mcp.Checkpoint{ID: r.ID, FilesChanged: r.FilesChanged, Message: r.Summary}, nil
}

func (d mcpDaemon) Briefing(ctx context.Context, id string) (mcp.Briefing, error) {
	br, err := d.c.Briefing(ctx, id)
	if err != nil {
		return mcp.Briefing{}, err
	}
	b := mcp.Briefing{Blockers: mcpBlockers(br.Blockers), NextActions: br.NextActions,
		ProgressPct: br.ProgressPct, TasksDone: br.TasksDone, TasksTotal: br.TasksTotal}
	if t := br.NextTask; t != nil {
		b.NextTask = &mcp.Task{ID: t.ID, Description: t.Description, Priority: t.Priority}
	}
	if h := br.Previous; h != nil {
		b.Previous = &mcp.Handoff{
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

func (d mcpDaemon) Extend(ctx context.Context, id string, by time.Duration) (mcp.Extension, error) {
	rec, err := d.c.AgentExtend(ctx, id, by.String())
	if err != nil {
		if errors.Is(err, ipc.ErrConflict) {
			return mcp.Extension{}, fmt.Errorf("%w: %v", mcp.ErrExtendRefused, err)
		}
		return mcp.Extension{}, err
	}
	x := mcp.Extension{Deadline: rec.Deadline, Left: max(time.Until(rec.Deadline), 0).Round(time.Second)}
	if rec.Spec != nil && rec.Agent != nil {
		x.ExtendLeft = max(rec.Spec.AgentMayExtend.Duration-time.Duration(rec.Agent.ExtendedSeconds)*time.Second, 0)
	}
	return x, nil
}

func mcpBlockers(bs []ipc.Blocker) []mcp.Blocker {
	out := make([]mcp.Blocker, 0, len(bs))
	for _, b := range bs {
		out = append(out, mcp.Blocker{ID: b.ID, Question: b.Question, Priority: b.Priority})
	}
	return out
}
