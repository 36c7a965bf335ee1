package session

import (
	"fmt"
	"math"
	"slices"
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
	// Worktree is the session's worktree as it was left, nil for none.
	Worktree *state.WorktreeHandoff
}

// account is what happened and what is next: one value, made once at an
// end from the sources in their precedence — the agent's reports of this
// session, then the feature list as it is on disk now, then the previous
// state — and rendered into the handoff, session_state.json and the
// progress entry (and, at the next start, context.md), so that every view
// says the same next task, progress and blockers.
type account struct {
	// meaningful is false for a session that reported nothing, changed no
	// file and completed nothing: it does not replace the last summary.
	meaningful bool
	summary    string
	completed  []state.Feature
	// progress is known when the feature list or a report says it.
	progress struct {
		known       bool
		pct         float64
		done, total int
	}
	next     []string
	nextFrom string
	task     string
	status   string
	step     [2]int
	open     []state.Blocker
	resolved []state.Blocker
	// reported: the agent said something, if not a summary.
	reported bool
	seq      int
	passing  []state.TaskID
}

// nextLimit is how many next actions every view shows.
const nextLimit = state.MaxNextActions

func makeAccount(in *accountInput) account {
	var a account
	rep, rec := in.Report, in.Rec
	featuresOK := in.FeaturesErr == nil && len(in.Features) > 0

	// Completed: features that turned passing during the session. A
	// session recovered after a crash knows them from its record.
	if featuresOK {
		atStart := in.FeaturesAtStart
		if atStart == nil && rec.PassingAtStart != nil {
			atStart = passingFeatures(rec.PassingAtStart)
		}
		byKey := map[string]state.Feature{}
		for _, f := range in.Features {
			byKey[f.Key().String()] = f
		}
		if atStart != nil {
			for _, id := range state.Completed(atStart, in.Features) {
				a.completed = append(a.completed, byKey[id.String()])
			}
		}
		for _, f := range in.Features {
			if f.Passes && !f.Key().IsZero() {
				a.passing = append(a.passing, f.Key())
			}
		}
	}

	// The task: the reported one, else the feature list's next at the
	// start; completed if the agent says so or the feature turned passing.
	a.task = rep.Task
	if a.task == "" && in.FeaturesErr == nil {
		if next := state.NextTasks(in.FeaturesAtStart, 1); len(next) > 0 {
			a.task = next[0].Description
		}
	}
	a.step[0], a.step[1] = parseStep(rep.Step)
	a.status = taskStatus(in.Reason, rep)
	turned := false
	for _, f := range a.completed {
		if a.task == f.Description || a.task == f.Key().String() {
			turned = true
		}
	}
	switch {
	case turned:
		// A task that turned passing is done, whoever named it.
		a.status = state.TaskCompleted
	case rep.Task == "" && rep.Status == "" && a.status == state.TaskCompleted:
		// A task sessiond picked from the list is done only once it
		// passes: an exit 0 alone says nothing about it.
		a.status = state.TaskInProgress
	}

	// Blockers: those open at the end of the session, with their ids; one
	// raised in this session blocks the task unless the agent says more.
	a.open, a.resolved = append([]state.Blocker{}, rec.Blockers...), append([]state.Blocker{}, rec.ResolvedBlockers...)
	a.seq = rec.BlockerSeq
	seqAtStart := 0
	if in.Previous != nil {
		seqAtStart = in.Previous.BlockerSeq
	}
	for _, b := range a.open {
		if b.ID > seqAtStart && rep.Status == "" && a.status != state.TaskCompleted {
			a.status = state.TaskBlocked
		}
	}

	// Next: the agent's words, else the feature list's open items, else
	// what the previous state said.
	switch {
	case len(rep.Next) > 0:
		a.next, a.nextFrom = append([]string(nil), rep.Next...), state.NextFromReport
	case in.FeaturesErr == nil && len(in.Features) > 0:
		for _, f := range state.NextTasks(in.Features, nextLimit) {
			a.next = append(a.next, featureLine(f))
		}
		a.nextFrom = state.NextFromFeatures
	case in.Previous != nil:
		a.next, a.nextFrom = append([]string(nil), in.Previous.NextActions...), in.Previous.NextFrom
	}
	if len(a.next) > nextLimit {
		a.next = a.next[:nextLimit]
	}

	// Progress: the feature list, else the report, else the previous.
	switch {
	case featuresOK:
		p := state.Progress(in.Features)
		a.progress.known, a.progress.pct, a.progress.done, a.progress.total = true, math.Round(p.Pct*10)/10, p.Done, p.Total
	case rep.Progress != nil:
		a.progress.known, a.progress.pct = true, *rep.Progress
	case in.Previous != nil:
		a.progress.known, a.progress.pct = true, in.Previous.ProgressPct
		a.progress.done, a.progress.total = in.Previous.TasksDone, in.Previous.TasksTotal
	}

	a.meaningful = reported(rep) || len(rec.FilesChanged) > 0 || len(a.completed) > 0 || len(a.resolved) > 0 ||
		a.seq > seqAtStart
	if !a.meaningful && rep.Task == "" {
		// It attempted nothing that shows.
		a.task, a.status = "", ""
	}
	a.summary = rep.Summary
	a.reported = reported(rep) || len(rec.Blockers) > 0 || len(a.resolved) > 0
	return a
}

// passingFeatures makes a feature list of the ids that passed.
func passingFeatures(ids []ipc.TaskID) []state.Feature {
	out := []state.Feature{}
	for _, id := range ids {
		f := state.Feature{Passes: true, ID: id}
		if n, ok := id.Int(); ok {
			f.ID = state.IntTaskID(n)
		} else if id.IsNumber() {
			f.ID = state.TaskID{}
		}
		out = append(out, f)
	}
	return out
}

// reported tells whether the agent said anything in the session.
func reported(r ipc.Report) bool {
	return r.Summary != "" || len(r.Next) > 0 || r.Plan != "" || r.Progress != nil || r.Task != "" ||
		r.Step != "" || r.Status != "" || r.LastAction != ""
}

func blockerLine(b state.Blocker) string { return fmt.Sprintf("%s (#%d)", b.Question, b.ID) }

// buildHandoff renders the account as handoff.json, with what only the
// supervisor saw: times, exit status, git, files, output.
func buildHandoff(in *accountInput) *state.Handoff {
	a := makeAccount(in)
	rec, rep := in.Rec, in.Report
	h := &state.Handoff{
		SessionID: rec.ID, ProjectDir: rec.ProjectDir, Command: rec.Command,
		StartedAt: rec.StartedAt, EndedAt: in.Now, EndReason: string(in.Reason),
		ExitCode: rec.ExitCode, Signal: rec.Signal, Restarts: rec.Restarts,
		FilesChanged: rec.FilesChanged, LastFileEdited: rec.LastFileEdited,
		Checkpoint: rec.LastCheckpoint, LogTail: in.LogTail,
		TaskAttempted: a.task, TaskStatus: a.status, CurrentStep: a.step[0], TotalSteps: a.step[1],
		LastActionTaken:      rep.LastAction,
		Summary:              a.summary,
		Plan:                 rep.Plan,
		RecommendedNextSteps: append([]string(nil), a.next...),
		Warnings:             append([]string(nil), rec.Warnings...),
		DevServerWasRunning:  rec.DevServerWasRunning,
		Agent:                agentFacts(rec),
	}
	if a.progress.known {
		pct := a.progress.pct
		h.ProgressPct = &pct
	}
	if a := rec.Agent; a != nil && in.Reason == Waiting && a.WaitingReason != "" {
		h.Warnings = append(h.Warnings, "the agent was waiting for "+a.WaitingReason)
	}
	if a := rec.Agent; a != nil && a.Retrying != nil {
		r := a.Retrying
		h.Warnings = append(h.Warnings, fmt.Sprintf("the agent was retrying its API for %s: %s%s",
			in.Now.Sub(r.Since).Round(time.Second), r.Reason, retryCount(r.Attempts, r.MaxAttempts)))
	}
	if a := rec.Agent; a != nil && a.Limit != nil && (in.Reason == Limit || a.State == ipc.AgentLimited) {
		h.Warnings = append(h.Warnings, limitHandoff(a.Limit))
	}
	if a := rec.Agent; a != nil && a.State == ipc.AgentStalled {
		h.Warnings = append(h.Warnings, "the agent had stalled: no progress for stall_timeout ("+in.Spec.StallTimeout.String()+") before the end")
	}
	if len(a.open) > 0 {
		var qs []string
		for _, b := range a.open {
			qs = append(qs, blockerLine(b))
		}
		h.BlockedReason = strings.Join(qs, "; ")
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
	h.Worktree = in.Worktree
	h.Warnings = append(h.Warnings, worktreeWarnings(in.Rec.Worktree)...)
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
	return reason.policy().Status
}

func featureLine(f state.Feature) string {
	if f.Key().IsZero() {
		return f.Description
	}
	return fmt.Sprintf("%s (Task #%s)", f.Description, f.Key())
}

// buildSessionState renders the account as the project's new
// session_state.json over the previous one. A session that did nothing
// leaves last_session alone and is counted in sessions_since.
func buildSessionState(in *accountInput, h *state.Handoff) *state.SessionState {
	a := makeAccount(in)
	st := &state.SessionState{}
	if in.Previous != nil {
		c := *in.Previous
		st = &c
	}
	var completed []state.TaskID
	for _, f := range a.completed {
		completed = append(completed, f.Key())
	}
	if a.meaningful || st.LastSession == nil {
		summary := a.summary
		if summary == "" {
			summary = autoSummary(h, a)
		}
		st.LastSession = &state.LastSession{Summary: summary, CompletedTasks: completed, Timestamp: in.Now,
			SessionID: in.Rec.ID, EndReason: h.EndReason}
		st.SessionsSince, st.RecentRuns = 0, nil
	} else {
		st.SessionsSince++
		st.RecentRuns = append(slices.Clone(st.RecentRuns), state.Run{SessionID: in.Rec.ID, EndReason: h.EndReason, EndedAt: in.Now})
	}
	st.NextActions, st.NextFrom = append([]string(nil), a.next...), a.nextFrom
	if in.Report.Plan != "" {
		st.CurrentPlan = in.Report.Plan
	}
	st.ActiveBlockers = append([]state.Blocker{}, a.open...)
	st.BlockerSeq = max(st.BlockerSeq, a.seq)
	if a.progress.known {
		st.ProgressPct, st.TasksDone, st.TasksTotal = a.progress.pct, a.progress.done, a.progress.total
	}
	if in.FeaturesErr == nil {
		st.PassingTasks = a.passing
	}
	if ag := in.Rec.Agent; ag != nil && ag.ConversationID != "" {
		st.Conversation = &state.Conversation{Agent: ag.Name, ID: ag.ConversationID, TranscriptPath: ag.TranscriptPath,
			SessionID: in.Rec.ID, EndedAt: in.Now}
	}
	return st
}

// autoSummary describes a session the agent did not describe itself.
func autoSummary(h *state.Handoff, a account) string {
	var parts []string
	if len(a.completed) > 0 {
		var done []string
		for _, f := range a.completed {
			done = append(done, fmt.Sprintf("Task #%s (%s)", f.Key(), f.Description))
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
	if a.reported {
		parts = append(parts, end+", with no summary reported")
	} else {
		parts = append(parts, end+", without a report")
	}
	if n := len(h.FilesChanged); n > 0 {
		parts = append(parts, plural(n, "file")+" changed")
	}
	s := strings.Join(parts, "; ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// buildProgressEntry renders the account as the session's progress-log
// entry: each item under one heading only.
func buildProgressEntry(in *accountInput, h *state.Handoff) state.ProgressEntry {
	a := makeAccount(in)
	rep := in.Report
	e := state.ProgressEntry{Time: in.Now, SessionID: in.Rec.ID, EndReason: h.EndReason, NextSteps: a.next}
	done := map[string]bool{}
	for _, f := range a.completed {
		e.Completed = append(e.Completed, fmt.Sprintf("%s (Task #%s)", f.Description, f.Key()))
		done[f.Description], done[f.Key().String()] = true, true
	}
	if a.task != "" && !done[a.task] {
		item := a.task
		if a.step[1] > 0 {
			item += fmt.Sprintf(" (step %d/%d)", a.step[0], a.step[1])
		}
		if a.status == state.TaskCompleted {
			e.Completed = append(e.Completed, item)
		} else {
			e.InProgress = append(e.InProgress, item)
		}
	}
	for _, b := range a.open {
		e.Blocked = append(e.Blocked, blockerLine(b))
	}
	for _, b := range a.resolved {
		e.Resolved = append(e.Resolved, blockerLine(b))
	}
	if rep.Summary != "" {
		e.Notes = append(e.Notes, rep.Summary)
	}
	e.Notes = append(e.Notes, fmt.Sprintf("Ended: %s; %s changed", describeHandoffEnd(h), plural(len(h.FilesChanged), "file")))
	if ag := h.Agent; ag != nil {
		e.Notes = append(e.Notes, agentLine(ag))
	}
	e.Notes = append(e.Notes, h.Warnings...)
	return e
}

func describeHandoffEnd(h *state.Handoff) string {
	if h.EndReason == string(Crashed) {
		return "unobserved (exit status unknown)"
	}
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

// agentLine is the progress log's line about the agent: its conversation
// and what it used.
func agentLine(a *state.AgentFacts) string {
	line := "Agent: " + a.Name
	if a.ConversationID != "" {
		line += ", conversation " + a.ConversationID
	}
	if a.Turns > 0 {
		line += ", " + plural(a.Turns, "turn")
	}
	if t := a.Tokens; t != nil {
		line += fmt.Sprintf("; %d tokens (%d in, %d out, %d cache read, %d cache write)", t.Total(), t.Input, t.Output, t.CacheRead, t.CacheWrite)
		switch {
		case t.CostKnown && t.CostUSD >= t.EstimatedUSD:
			line += fmt.Sprintf(", $%.2f", t.CostUSD)
		case t.EstimatedUSD > 0:
			line += fmt.Sprintf(", about $%.2f at list prices", t.EstimatedUSD)
		}
	}
	return line
}
