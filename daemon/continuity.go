package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// gitTimeout bounds the git facts collected at a session's start and end.
const gitTimeout = 10 * time.Second

// prepare readies the project before the command starts: .sessiond, the
// restore summary, the previous handoff, the feature list, context.md.
// Problems with earlier files are notices, never a failed start.
func (d *Daemon) prepare(s *session, resp *ipc.StartResponse) error {
	if _, err := state.ProjectDir(s.projectDir); err != nil {
		return ipc.BadRequest("prepare %s: %v", s.projectDir, err)
	}
	now := time.Now()
	notice := func(err error) {
		resp.Notices = append(resp.Notices, err.Error())
		s.log.Warn("project file", zap.Error(err))
	}
	st, err := state.LoadSessionState(s.projectDir)
	if err != nil {
		notice(err)
	}
	if st != nil {
		resp.Summary = state.RestoreSummary(st, now)
	}
	var prev *state.Handoff
	if h, err := state.LoadHandoff(state.HandoffPath(s.projectDir)); err == nil {
		prev = h
		s.prevHandoff = state.HandoffPath(s.projectDir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		notice(err)
	}
	if l, err := state.ReadLock(s.projectDir); err == nil && l.SessionID != s.id {
		if other, err := d.reg.lookup(ipc.Caller{UID: 0}, l.SessionID); err != nil || !ipc.Live(other.snapshot().State) {
			notice(fmt.Errorf("%s: session %s ended uncleanly (its lock was left behind)", state.LockPath(s.projectDir), l.SessionID))
		}
	}
	in := state.ContextInput{SessionID: s.id, ProjectDir: s.projectDir, Previous: prev, State: st, Now: now}
	rec := s.snapshot()
	in.Deadline, in.WarnAt = rec.Deadline, rec.WarnAt
	if feats, err := s.loadFeatures(); err == nil {
		s.featuresAtStart = feats
		p := state.Progress(feats)
		in.Features = &p
		if next := state.NextTasks(feats, 1); len(next) > 0 {
			in.NextTask = &next[0]
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		notice(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	in.GitLog = checkpoint.RecentLog(ctx, s.projectDir, 10)
	if err := state.WriteFile(state.ContextPath(s.projectDir), state.BuildContext(in), 0o600); err != nil {
		return fmt.Errorf("write context: %w", err)
	}
	s.own(filepath.Join(s.projectDir, state.DirName), filepath.Join(s.projectDir, ".git", "info", "exclude"), state.ContextPath(s.projectDir),
		state.SessionStatePath(s.projectDir), state.HandoffPath(s.projectDir), s.progressPath())
	return nil
}

func (s *session) featureListPath() string {
	p := s.spec.FeatureList
	if p == "" {
		p = state.DefaultFeatureList
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.projectDir, p)
	}
	return p
}

func (s *session) loadFeatures() ([]state.Feature, error) {
	return state.LoadFeatures(s.featureListPath())
}

func (s *session) progressPath() string {
	if p := s.spec.ProgressFile; p != "" {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(s.projectDir, p)
	}
	return state.ProgressPath(s.projectDir)
}

// writeLock records the live session in the project's session.lock.
func (s *session) writeLock() {
	rec := s.snapshot()
	l := &state.Lock{SessionID: s.id, DaemonPID: os.Getpid(), ChildPID: rec.PID,
		ChildStartTime: rec.StartTime, BootID: rec.BootID, CreatedAt: time.Now()}
	if err := state.WriteLock(s.projectDir, l); err != nil {
		s.log.Warn("write session lock", zap.Error(err))
	}
	s.own(state.LockPath(s.projectDir))
}

// writeContinuity writes the handoff, the session state and the progress
// entry from what the daemon saw and what the agent reported, then releases
// the project's lock.
func (s *session) writeContinuity(reason string, devServer bool) {
	rec := s.snapshot()
	now := time.Now()
	if rec.EndedAt != nil {
		now = *rec.EndedAt
	}
	rep := ipc.Report{}
	if rec.Report != nil {
		rep = *rec.Report
	}
	h := &state.Handoff{
		SessionID: s.id, ProjectDir: s.projectDir, Command: rec.Command,
		StartedAt: rec.StartedAt, EndedAt: now, EndReason: reason,
		ExitCode: rec.ExitCode, Signal: rec.Signal, Restarts: rec.Restarts,
		FilesChanged: rec.FilesChanged, LastFileEdited: rec.LastFileEdited,
		Checkpoint: rec.LastCheckpoint, LogTail: s.tailLines(20),
		TaskAttempted: rep.Task, LastActionTaken: rep.LastAction,
		RecommendedNextSteps: append([]string(nil), rep.Next...),
		Warnings:             append([]string(nil), rec.Warnings...),
		DevServerWasRunning:  devServer,
	}
	if rep.Step != "" {
		cur, tot, _ := strings.Cut(rep.Step, "/")
		h.CurrentStep, _ = strconv.Atoi(strings.TrimSpace(cur))
		h.TotalSteps, _ = strconv.Atoi(strings.TrimSpace(tot))
	}
	h.TaskStatus = taskStatus(reason, rep)
	if len(rep.Blockers) > 0 {
		h.BlockedReason = strings.Join(rep.Blockers, "; ")
		h.BlockedNeedsHuman = true
	}
	switch reason {
	case ipc.EndTimeout:
		h.Warnings = append(h.Warnings, "the session hit its deadline ("+s.spec.Timeout.String()+"): work may be unfinished mid-step")
	case ipc.EndCrashed:
		h.Warnings = append(h.Warnings, "the session's end was not observed (the daemon stopped): check the work tree before going on")
	case ipc.EndIdle:
		h.Warnings = append(h.Warnings, "the session was stopped after "+s.spec.IdleTimeout.String()+" without output or file changes: it may have been stuck")
	case ipc.EndError:
		h.Warnings = append(h.Warnings, "the command failed ("+describeEnd(rec)+"): see log_tail")
	}

	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	if facts, err := checkpoint.Facts(ctx, s.projectDir); err == nil && facts.IsRepo {
		h.GitCommitHash, h.GitBranch = facts.Head, facts.Branch
		h.UncommittedFiles = facts.Uncommitted
		if len(facts.Uncommitted) > 0 {
			h.Warnings = append(h.Warnings, plural(len(facts.Uncommitted), "uncommitted file")+" in the work tree")
		}
		if facts.IndexLock {
			h.Warnings = append(h.Warnings, "a stale .git/index.lock is present: a git command was killed mid-write; remove it once no git process runs")
		}
	}

	feats, ferr := s.loadFeatures()
	var completed []state.TaskID
	if ferr == nil {
		completed = state.Completed(s.featuresAtStart, feats)
		if h.TaskAttempted == "" {
			if next := state.NextTasks(s.featuresAtStart, 1); len(next) > 0 {
				h.TaskAttempted = next[0].Description
			}
		}
	}
	if len(h.RecommendedNextSteps) == 0 && ferr == nil {
		for _, f := range state.NextTasks(feats, 3) {
			h.RecommendedNextSteps = append(h.RecommendedNextSteps, featureLine(f))
		}
	}

	if err := state.SaveHandoff(state.HandoffPath(s.projectDir), h); err != nil {
		s.log.Error("write handoff", zap.Error(err))
	}
	archive := filepath.Join(s.dir, "handoff.json")
	if err := state.SaveHandoff(archive, h); err != nil {
		s.log.Error("archive handoff", zap.Error(err))
	}
	s.set(func(r *ipc.Session) { r.HandoffPath = state.HandoffPath(s.projectDir) })

	s.saveSessionState(h, rep, feats, ferr, completed, now)
	s.appendProgress(h, rep, feats, completed, now)
	s.own(state.HandoffPath(s.projectDir), state.SessionStatePath(s.projectDir), s.progressPath())
	if l, err := state.ReadLock(s.projectDir); err == nil && l.SessionID == s.id {
		_ = state.RemoveLock(s.projectDir)
	}
	if err := state.RemoveWarning(s.projectDir); err != nil {
		s.log.Debug("remove warning file", zap.Error(err))
	}
}

func taskStatus(reason string, rep ipc.Report) string {
	switch rep.Status {
	case "completed", "in_progress", "blocked", "failed":
		return rep.Status
	}
	switch {
	case len(rep.Blockers) > 0:
		return "blocked"
	case reason == ipc.EndComplete:
		return "completed"
	case reason == ipc.EndError:
		return "failed"
	}
	return "in_progress"
}

func featureLine(f state.Feature) string {
	if f.Key().IsZero() {
		return f.Description
	}
	return fmt.Sprintf("%s (Task #%s)", f.Description, f.Key())
}

func (s *session) saveSessionState(h *state.Handoff, rep ipc.Report, feats []state.Feature, ferr error, completed []state.TaskID, now time.Time) {
	st, err := state.LoadSessionState(s.projectDir)
	if err != nil {
		s.log.Warn("session state", zap.Error(err))
	}
	if st == nil {
		st = &state.SessionState{}
	}
	summary := rep.Summary
	if summary == "" {
		summary = autoSummary(h, feats, completed)
	}
	st.LastSession = &state.LastSession{Summary: summary, CompletedTasks: completed, Timestamp: now,
		SessionID: s.id, EndReason: h.EndReason}
	if len(rep.Next) > 0 {
		st.NextActions = append([]string(nil), rep.Next...)
	} else if ferr == nil && (len(completed) > 0 || len(st.NextActions) == 0) {
		// Without a report, the previous next actions stand until the
		// feature list moves.
		st.NextActions = nil
		for _, f := range state.NextTasks(feats, 5) {
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
	if ferr == nil && len(feats) > 0 {
		p := state.Progress(feats)
		st.ProgressPct = math.Round(p.Pct*10) / 10
		st.TasksDone, st.TasksTotal = p.Done, p.Total
	} else if rep.Progress != nil {
		st.ProgressPct = *rep.Progress
	}
	if err := state.SaveSessionState(s.projectDir, st); err != nil {
		s.log.Error("write session state", zap.Error(err))
	}
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
	end := fmt.Sprintf("session %s ended %s after %s", h.SessionID, describeEndHandoff(h), d)
	if h.TaskAttempted != "" && h.TaskStatus != "completed" {
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

func (s *session) appendProgress(h *state.Handoff, rep ipc.Report, feats []state.Feature, completed []state.TaskID, now time.Time) {
	e := state.ProgressEntry{Time: now, SessionID: s.id, EndReason: h.EndReason, NextSteps: h.RecommendedNextSteps, Blocked: rep.Blockers}
	byID := map[string]string{}
	for _, f := range feats {
		byID[f.Key().String()] = f.Description
	}
	for _, id := range completed {
		e.Completed = append(e.Completed, fmt.Sprintf("%s (Task #%s)", byID[id.String()], id))
	}
	if rep.Summary != "" {
		e.Notes = append(e.Notes, rep.Summary)
	}
	if h.TaskStatus != "completed" && h.TaskAttempted != "" {
		item := h.TaskAttempted
		if h.TotalSteps > 0 {
			item += fmt.Sprintf(" (step %d/%d)", h.CurrentStep, h.TotalSteps)
		}
		e.InProgress = append(e.InProgress, item)
	}
	e.Notes = append(e.Notes, fmt.Sprintf("Ended: %s; %s changed", describeEndHandoff(h), plural(len(h.FilesChanged), "file")))
	e.Notes = append(e.Notes, h.Warnings...)
	if _, err := state.AppendProgress(s.progressPath(), e); err != nil {
		s.log.Error("append progress log", zap.Error(err))
	}
}

func describeEndHandoff(h *state.Handoff) string {
	switch {
	case h.Signal != "":
		return fmt.Sprintf("%s (%s)", h.EndReason, h.Signal)
	case h.ExitCode != nil:
		return fmt.Sprintf("%s (exit %d)", h.EndReason, *h.ExitCode)
	}
	return h.EndReason + " (exit status unknown)"
}

// plural says "1 file" or "3 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
