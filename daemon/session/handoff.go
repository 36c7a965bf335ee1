package session

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// accountInput is everything the account of an end is made from. The
// functions of this file are pure: the same input gives the same files.
type accountInput struct {
	Rec    ipc.Session
	Spec   config.Spec
	Reason Reason
	Report ipc.Report
	// Git is the work tree's facts, nil for a project outside git.
	Git *checkpoint.GitFacts
	// FeaturesAtStart and Features are the feature list at the start and
	// now; FeaturesErr is why it could not be read now.
	FeaturesAtStart []state.Feature
	Features        []state.Feature
	FeaturesErr     error
	// Previous is the project's session state before this end.
	Previous *state.SessionState
	LogTail  []string
	Now      time.Time
}

// completed returns the features that turned passing during the session.
func (in accountInput) completed() []state.TaskID {
	if in.FeaturesErr != nil {
		return nil
	}
	return state.Completed(in.FeaturesAtStart, in.Features)
}

// buildHandoff makes handoff.json from what the daemon saw and what the
// agent reported.
func buildHandoff(in accountInput) *state.Handoff {
	rec, rep := in.Rec, in.Report
	h := &state.Handoff{
		SessionID: rec.ID, ProjectDir: rec.ProjectDir, Command: rec.Command,
		StartedAt: rec.StartedAt, EndedAt: in.Now, EndReason: string(in.Reason),
		ExitCode: rec.ExitCode, Signal: rec.Signal, Restarts: rec.Restarts,
		FilesChanged: rec.FilesChanged, LastFileEdited: rec.LastFileEdited,
		Checkpoint: rec.LastCheckpoint, LogTail: in.LogTail,
		TaskAttempted: rep.Task, LastActionTaken: rep.LastAction,
		RecommendedNextSteps: append([]string(nil), rep.Next...),
		Warnings:             append([]string(nil), rec.Warnings...),
		DevServerWasRunning:  rec.DevServerWasRunning,
	}
	h.CurrentStep, h.TotalSteps = parseStep(rep.Step)
	h.TaskStatus = taskStatus(in.Reason, rep)
	if len(rep.Blockers) > 0 {
		h.BlockedReason = strings.Join(rep.Blockers, "; ")
		h.BlockedNeedsHuman = true
	}
	if w := in.Reason.policy().warning; w != nil {
		h.Warnings = append(h.Warnings, w(in.Spec, describeEnd(string(in.Reason), rec.ExitCode, rec.Signal)))
	}
	if g := in.Git; g != nil {
		h.GitCommitHash, h.GitBranch = g.Head, g.Branch
		h.UncommittedFiles = g.Uncommitted
		if len(g.Uncommitted) > 0 {
			h.Warnings = append(h.Warnings, plural(len(g.Uncommitted), "uncommitted file")+" in the work tree")
		}
		if g.IndexLock {
			h.Warnings = append(h.Warnings, "a stale .git/index.lock is present: a git command was killed mid-write; remove it once no git process runs")
		}
	}
	if in.FeaturesErr == nil {
		if h.TaskAttempted == "" {
			if next := state.NextTasks(in.FeaturesAtStart, 1); len(next) > 0 {
				h.TaskAttempted = next[0].Description
			}
		}
		if len(h.RecommendedNextSteps) == 0 {
			for _, f := range state.NextTasks(in.Features, 3) {
				h.RecommendedNextSteps = append(h.RecommendedNextSteps, featureLine(f))
			}
		}
	}
	return h
}

// parseStep reads a report's "N/M" step.
func parseStep(step string) (cur, total int) {
	if step == "" {
		return 0, 0
	}
	c, t, _ := strings.Cut(step, "/")
	cur, _ = strconv.Atoi(strings.TrimSpace(c))
	total, _ = strconv.Atoi(strings.TrimSpace(t))
	return cur, total
}

// taskStatus is the status the agent reported, else what the end says.
func taskStatus(reason Reason, rep ipc.Report) string {
	switch rep.Status {
	case state.TaskCompleted, state.TaskInProgress, state.TaskBlocked, state.TaskFailed:
		return rep.Status
	}
	if len(rep.Blockers) > 0 {
		return state.TaskBlocked
	}
	return reason.policy().status
}

func featureLine(f state.Feature) string {
	if f.Key().IsZero() {
		return f.Description
	}
	return fmt.Sprintf("%s (Task #%s)", f.Description, f.Key())
}

// buildSessionState makes the project's new session_state.json from the
// previous one, the report and the feature list.
func buildSessionState(in accountInput, h *state.Handoff) *state.SessionState {
	st := &state.SessionState{}
	if in.Previous != nil {
		c := *in.Previous
		st = &c
	}
	rep, completed := in.Report, in.completed()
	summary := rep.Summary
	if summary == "" {
		summary = autoSummary(h, in.Features, completed)
	}
	st.LastSession = &state.LastSession{Summary: summary, CompletedTasks: completed, Timestamp: in.Now,
		SessionID: in.Rec.ID, EndReason: h.EndReason}
	if len(rep.Next) > 0 {
		st.NextActions = append([]string(nil), rep.Next...)
	} else if in.FeaturesErr == nil && (len(completed) > 0 || len(st.NextActions) == 0) {
		// Without a report, the previous next actions stand until the
		// feature list moves.
		st.NextActions = nil
		for _, f := range state.NextTasks(in.Features, 5) {
			st.NextActions = append(st.NextActions, featureLine(f))
		}
	}
	if rep.Plan != "" {
		st.CurrentPlan = rep.Plan
	}
	if rep.Blockers != nil {
		st.ActiveBlockers = nil
		for i, q := range rep.Blockers {
			st.ActiveBlockers = append(st.ActiveBlockers, state.Blocker{ID: i + 1, Question: q, Priority: "high"})
		}
	}
	if in.FeaturesErr == nil && len(in.Features) > 0 {
		p := state.Progress(in.Features)
		st.ProgressPct = math.Round(p.Pct*10) / 10
		st.TasksDone, st.TasksTotal = p.Done, p.Total
	} else if rep.Progress != nil {
		st.ProgressPct = *rep.Progress
	}
	return st
}

// autoSummary describes a session the agent did not describe itself.
func autoSummary(h *state.Handoff, feats []state.Feature, completed []state.TaskID) string {
	var parts []string
	if len(completed) > 0 {
		byID := map[string]string{}
		for _, f := range feats {
			byID[f.Key().String()] = f.Description
		}
		var done []string
		for _, id := range completed {
			done = append(done, fmt.Sprintf("Task #%s (%s)", id, byID[id.String()]))
		}
		parts = append(parts, "Completed "+strings.Join(done, ", "))
	}
	d := h.EndedAt.Sub(h.StartedAt).Round(time.Second)
	end := fmt.Sprintf("session %s ended %s after %s", h.SessionID, describeHandoffEnd(h), d)
	if h.TaskAttempted != "" && h.TaskStatus != state.TaskCompleted {
		end += " while on " + h.TaskAttempted
		if h.TotalSteps > 0 {
			end += fmt.Sprintf(" (step %d/%d)", h.CurrentStep, h.TotalSteps)
		}
	}
	parts = append(parts, end+", without a report")
	if n := len(h.FilesChanged); n > 0 {
		parts = append(parts, plural(n, "file")+" changed")
	}
	s := strings.Join(parts, "; ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// buildProgressEntry makes the session's progress-log entry.
func buildProgressEntry(in accountInput, h *state.Handoff) state.ProgressEntry {
	rep := in.Report
	e := state.ProgressEntry{Time: in.Now, SessionID: in.Rec.ID, EndReason: h.EndReason,
		NextSteps: h.RecommendedNextSteps, Blocked: rep.Blockers}
	byID := map[string]string{}
	for _, f := range in.Features {
		byID[f.Key().String()] = f.Description
	}
	for _, id := range in.completed() {
		e.Completed = append(e.Completed, fmt.Sprintf("%s (Task #%s)", byID[id.String()], id))
	}
	if rep.Summary != "" {
		e.Notes = append(e.Notes, rep.Summary)
	}
	if h.TaskStatus != state.TaskCompleted && h.TaskAttempted != "" {
		item := h.TaskAttempted
		if h.TotalSteps > 0 {
			item += fmt.Sprintf(" (step %d/%d)", h.CurrentStep, h.TotalSteps)
		}
		e.InProgress = append(e.InProgress, item)
	}
	e.Notes = append(e.Notes, fmt.Sprintf("Ended: %s; %s changed", describeHandoffEnd(h), plural(len(h.FilesChanged), "file")))
	e.Notes = append(e.Notes, h.Warnings...)
	return e
}

func describeHandoffEnd(h *state.Handoff) string {
	if h.Signal == "" && h.ExitCode == nil {
		return h.EndReason + " (exit status unknown)"
	}
	return describeEnd(h.EndReason, h.ExitCode, h.Signal)
}

// plural says "1 file" or "3 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
