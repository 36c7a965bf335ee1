package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/agent"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// agentRun is what the session knows of its agent while it runs: the
// adapter, what Prepare decided, the transcript as read so far and the
// warnings still to be told in the agent's own conversation. The record's
// Agent and Tokens are its published part.
type agentRun struct {
	adapter agent.Adapter
	plan    agent.Plan
	// tr reads the current conversation's transcript; nil until its path
	// is known.
	tr *agent.Transcript
	// base is the current transcript's usage before this session (a
	// resumed conversation's history); prior is the usage of transcripts
	// read before the current one (a conversation the agent replaced).
	base, prior agent.Usage
	baseKnown   bool
	// since is the start, for Locate and the transcript's events.
	since time.Time
	// located: Locate found the conversation, or was tried maxLocate
	// times (it scans the agent's files); locateTries counts the tries.
	located     bool
	locateTries int
	// context is a warning not yet told in the conversation.
	context string
	// budgetWarned: the budget's warning was given.
	budgetWarned bool
	// turnsEnded are the ids of the latest turns counted, so that a turn's
	// end told by a hook and by the transcript counts once.
	turnsEnded []string
}

// maxLocate is how many of an agent's events may look for its
// conversation on disk before it is given up.
const maxLocate = 3

// maxAgentNotices bounds the notices the record keeps of its agent.
const maxAgentNotices = 10

// contextEvents are the hook events whose answer Claude Code adds to the
// conversation (hookSpecificOutput.additionalContext).
var contextEvents = map[string]bool{"SessionStart": true, "UserPromptSubmit": true, "PostToolUse": true}

// prepareAgent recognises the session's agent and makes its command line:
// hooks that report to sessiond, the conversation's id, the resume, the MCP
// server. A command that is no agent sessiond knows runs as it is, with no
// agent in the record.
func (s *Session) prepareAgent() error {
	s.command = s.spec.Command
	a, err := agent.Detect(s.spec.Agent, s.spec.Command)
	if err != nil {
		return ipc.BadRequest("agent: %w", err)
	}
	named := s.spec.Agent != "" && s.spec.Agent != config.AgentAuto && s.spec.Agent != config.AgentNone
	if a == agent.Generic && !named {
		return nil
	}
	now := s.deps.Clock.Now()
	run := &agentRun{adapter: a, since: now}
	if s.deps.Sessionctl == "" {
		run.plan = agent.Plan{Agent: a.Name(), Argv: s.spec.Command, InitialState: agent.StateUnknown,
			Notices: []string{"sessionctl was not found beside sessiond or on PATH: the agent runs without sessiond's hooks"}}
	} else {
		l := agent.Launch{
			Argv: s.spec.Command, SessionID: s.id, SessionDir: s.dir, ProjectDir: s.projectDir,
			Sessionctl: s.deps.Sessionctl, Socket: s.deps.Socket, Resume: s.resume, MCP: true, TTY: s.spec.OnTerminal(),
			Budget: agent.Budget{MaxTokens: s.spec.MaxTokens, MaxCostUSD: s.spec.MaxCostUSD}, Env: s.env(),
			Files: s.files(),
		}
		if s.owner != nil {
			// A root daemon's state dir is closed to the user the agent
			// runs as: its files go in the project's .sessiond, as the user.
			l.Write = func(name string, data []byte) (string, error) { return s.proj.WriteAgentFile(s.id, name, data) }
		}
		ctx, cancel := context.WithTimeout(s.startCtx, gitTimeout)
		run.plan, err = a.Prepare(ctx, l)
		cancel()
		if err != nil {
			return ipc.BadRequest("prepare %s: %w", a.Name(), err)
		}
	}
	p := run.plan
	s.command = p.Argv
	s.agent = run
	s.rec.Agent = &ipc.Agent{
		Name: p.Agent, Integrated: p.Integrated, Interactive: p.Interactive,
		ConversationID: p.ConversationID, TranscriptPath: p.TranscriptPath,
		State: string(p.InitialState), StateSince: &now, WaitingReason: p.InitialWaiting,
		Account: agent.Account(a, s.env(), s.uid),
	}
	if p.Resumed {
		s.rec.Agent.ResumedFrom = p.ConversationID
	}
	for _, n := range p.Notices {
		s.agentNotice(n)
		s.startInfo.Notices = append(s.startInfo.Notices, n)
	}
	if p.InitialState == agent.StateWaiting {
		s.timeline.waitingSince = now
	}
	if p.TranscriptPath != "" {
		s.openTranscript(p.TranscriptPath)
	}
	return nil
}

// agentNotice keeps a notice about the agent in the record (bounded).
func (s *Session) agentNotice(n string) {
	if s.rec.Agent != nil {
		s.rec.Agent.Notices = appendBounded(s.rec.Agent.Notices, state.EscapeText(n), maxAgentNotices)
	}
}

// openTranscript starts reading the transcript at path. What was counted
// of a transcript read before goes to prior, so that a budget never goes
// back; a resumed conversation's history is the base, not this session's.
func (s *Session) openTranscript(path string) {
	a := s.agent
	if a.tr != nil {
		if a.tr.Path() == path {
			return
		}
		a.prior = a.prior.Add(a.tr.Usage().Since(a.base))
	}
	a.tr = a.adapter.Transcript(path, agent.TranscriptOptions{Interactive: a.plan.Interactive, EventsSince: a.since, Files: s.files()})
	a.base, a.baseKnown = agent.Usage{}, false
	if a.tr == nil {
		return
	}
	if s.rec.Agent != nil && s.rec.Agent.ResumedFrom != "" {
		// The conversation's history was spent by earlier sessions.
		s.readTranscript()
		a.base, a.baseKnown = a.tr.Usage(), true
		return
	}
	a.baseKnown = true
}

// readTranscript reads what the transcript gained, applies its events and
// updates the record's tokens. It reports whether a budget is spent.
func (s *Session) readTranscript() (spent bool) {
	a := s.agent
	if a == nil || a.tr == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	up, err := a.tr.Read(ctx)
	cancel()
	for _, n := range up.Notices {
		s.agentNotice(n)
	}
	if err != nil && !errors.Is(err, agent.ErrNoTranscript) {
		s.logger().Warn("read the agent's transcript", zap.Error(err))
	}
	for _, ev := range up.Events {
		s.applyAgentEvent(ev)
	}
	if !a.baseKnown {
		return false
	}
	u := a.prior.Add(up.Usage.Since(a.base))
	s.rec.Tokens = &ipc.Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadTokens,
		CacheWrite: u.CacheWriteTokens, CostUSD: math.Round(u.CostUSD*1e6) / 1e6, CostKnown: u.CostKnown,
		EstimatedUSD: math.Round(u.EstimatedUSD*1e6) / 1e6}
	return s.checkBudget()
}

// agentEvent applies one payload of the agent's hooks. It answers what the
// hook should tell the agent (a warning not yet given), and whether the
// session must stop: its budget is spent.
func (s *Session) agentEvent(payload []byte) (ipc.AgentHookResponse, bool, error) {
	a := s.agent
	if a == nil {
		return ipc.AgentHookResponse{}, false, ipc.Conflict("session %s runs no agent sessiond knows (agent %q): its hooks have nothing to report to", s.id, s.spec.Agent)
	}
	ev, err := a.adapter.ParseHook(payload, a.plan.Interactive)
	if err != nil {
		s.agentNotice("a hook payload was refused: " + err.Error())
		_ = s.commit()
		return ipc.AgentHookResponse{}, false, ipc.BadRequest("%s hook payload: %w", a.adapter.Name(), err)
	}
	before := agentMark(s.rec)
	s.locateConversation(&ev)
	s.applyAgentEvent(ev)
	spent := s.readTranscript()
	s.scheduleRead()
	if agentMark(s.rec) != before || s.rec.State == ipc.StateWarned && s.rec.Warning != nil && before.warnedAt != s.rec.Warning.At {
		_ = s.commit()
	} else {
		// Tokens alone, or nothing new: the record is published now and
		// written with the next write, at most agentFlush later; a crash
		// meanwhile loses counts the transcript still holds.
		s.publish()
		s.recDirty = true
	}
	resp := ipc.AgentHookResponse{Event: ev.Hook, State: s.rec.Agent.State}
	var told []string
	if ev.SessionStarted && ev.Source != "compact" {
		// The agent starts with what the session knows: context.md, in its
		// own conversation, whatever its prompt says.
		if c := s.contextForAgent(); c != "" {
			told = append(told, c)
		}
	}
	if a.context != "" && contextEvents[ev.Hook] {
		told, a.context = append(told, a.context), ""
	}
	resp.Context = strings.Join(told, "\n\n")
	return resp, spent, nil
}

// maxAgentContext bounds the context.md an agent is given at its start
// (Claude Code keeps about 10,000 characters of a hook's added context).
const maxAgentContext = 9000

// contextForAgent is the session's context.md for its agent's start,
// bounded; "" when there is none.
func (s *Session) contextForAgent() string {
	if s.proj == nil {
		return ""
	}
	b, err := s.proj.ReadFile(filepath.Join(state.DirName, state.ContextFile), 1<<20)
	if err != nil {
		return ""
	}
	text := string(b)
	if len(text) > maxAgentContext {
		cut := maxAgentContext
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "\n\n[... cut: the rest is in " + filepath.Join(state.DirName, state.ContextFile) + "]"
	}
	return text
}

// locateConversation completes an event that names no conversation or no
// transcript (Codex's notify) from the agent's files on disk, before the
// event is applied, so that the record it publishes is whole: until found,
// at most maxLocate times (a slow disk may make a try time out).
func (s *Session) locateConversation(ev *agent.Event) {
	a, rec := s.agent, s.rec.Agent
	if a.located || ev.TranscriptPath != "" || rec.TranscriptPath != "" && (ev.ConversationID == "" || ev.ConversationID == rec.ConversationID) {
		return
	}
	id := ev.ConversationID
	if id == "" {
		id = rec.ConversationID
	}
	if !s.promptUnheard() {
		// An agent that waits for its first prompt has made no
		// conversation yet: no try spent.
		a.locateTries++
		a.located = a.locateTries >= maxLocate
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	conv, err := a.adapter.Locate(ctx, agent.Query{ConversationID: id, ProjectDir: s.projectDir, Since: a.since, Env: s.env(), Files: s.files()})
	cancel()
	if err != nil {
		s.logger().Debug("the agent's conversation was not found on disk", zap.Int("try", a.locateTries), zap.Error(err))
		return
	}
	a.located = true
	if ev.ConversationID == "" {
		ev.ConversationID = conv.ID
	}
	if conv.ID == ev.ConversationID {
		ev.TranscriptPath = conv.TranscriptPath
	}
}

// applyAgentEvent moves the record's agent fields with one event.
func (s *Session) applyAgentEvent(ev agent.Event) {
	a, rec := s.agent, s.rec.Agent
	now := s.deps.Clock.Now()
	for _, n := range ev.Notices {
		s.agentNotice(n)
	}
	if id := ev.ConversationID; id != "" && id != rec.ConversationID {
		switch {
		case rec.ConversationID == "":
			rec.ConversationID = id
			if ev.TranscriptPath == "" {
				rec.TranscriptPath = ""
			}
		case s.newConversation(ev):
			// The agent's word on a real new conversation wins over what
			// sessiond chose or found (a --resume by name, a /clear).
			s.warnRecord(fmt.Sprintf("the agent moved to conversation %s (%s); it began in %s", id, sourceOr(ev.Source, ev.Hook), rec.ConversationID))
			rec.ConversationID = id
			rec.TranscriptPath = ev.TranscriptPath
		default:
			// An id that names no conversation (a SessionEnd of an agent
			// stopped before its first turn): the one it runs in stays,
			// so that the handoff and --resume point at a real one.
			s.agentNotice(fmt.Sprintf("%s named conversation %s, which has no transcript: kept %s", ev.Hook, id, rec.ConversationID))
			ev.TranscriptPath = ""
		}
	}
	if p := ev.TranscriptPath; p != "" && p != rec.TranscriptPath {
		rec.TranscriptPath = p
	}
	if rec.TranscriptPath != "" && (a.tr == nil || a.tr.Path() != rec.TranscriptPath) {
		s.openTranscript(rec.TranscriptPath)
	}
	s.applyRetry(ev, now)
	if ev.Retry == nil && ev.Limit == nil && ev.Hook != "" {
		s.progressed(now)
	}
	if ev.Limit != nil && ipc.Live(s.rec.State) && s.rec.State != ipc.StateStopping {
		source := ev.Hook
		if !ev.At.IsZero() {
			source = "transcript"
		}
		s.limitStop = s.onLimit(*ev.Limit, source) || s.limitStop
	}
	if ev.TurnStarted && ev.Prompt != "" {
		rec.LastPrompt = state.EscapeText(ev.Prompt)
	}
	if ev.TurnStarted && slices.Contains(s.spec.CheckpointOn, config.CheckpointOnTurn) && s.changedBetweenTurns() {
		// What changed since the last turn's checkpoint (the person's own
		// edits, commands run outside the agent) gets a checkpoint of its
		// own before the next turn begins, so that a restore can go back
		// to just before any turn.
		s.beginCheckpoint("turn", "before: "+rec.LastPrompt)
	}
	if ev.TurnEnded && (ev.TurnID == "" || !slices.Contains(a.turnsEnded, ev.TurnID)) {
		if ev.TurnID != "" {
			a.turnsEnded = appendBounded(a.turnsEnded, ev.TurnID, 64)
		}
		rec.Turns++
		if slices.Contains(s.spec.CheckpointOn, config.CheckpointOnTurn) {
			s.turnCheckpoint(rec.LastPrompt)
		}
	}
	limited := rec.State == ipc.AgentLimited && ev.State != agent.StateWorking
	if ev.State != "" && ipc.Live(s.rec.State) && s.rec.State != ipc.StateStopping && !limited {
		// A stopping agent's last events (its SessionEnd) are no news of
		// what it was doing: the handoff tells what it was at the stop. A
		// limited agent stays limited until it works again.
		s.setAgentState(string(ev.State), state.EscapeText(ev.WaitingReason), now)
	}
}

// setAgentState records the agent's state; a change is an event, and
// waiting arms the waiting timeout.
func (s *Session) setAgentState(st, reason string, now time.Time) {
	rec := s.rec.Agent
	if st != ipc.AgentWaiting {
		reason = ""
	}
	if rec.State == st {
		// A wait told twice (Claude Code's PermissionRequest, then its
		// Notification) keeps its first, most precise, words; a wait for
		// something else takes the new ones.
		if kind(reason) != kind(rec.WaitingReason) || rec.WaitingReason == "" {
			rec.WaitingReason = reason
		}
		return
	}
	if rec.State == ipc.AgentLimited {
		// The limit lifted: the agent works (or waits) again.
		rec.Limit = nil
		s.timeline.continueAt = time.Time{}
	}
	rec.State, rec.WaitingReason, rec.StateSince = st, reason, &now
	s.timeline.stalled = st != ipc.AgentWorking
	if st == ipc.AgentWorking {
		s.timeline.progressAt = now
	}
	if st == ipc.AgentWaiting {
		s.timeline.waitingSince, s.timeline.waitWarned = now, false
	} else {
		s.timeline.waitingSince, s.timeline.waitWarned = time.Time{}, false
		if s.rec.State == ipc.StateWarned && s.rec.Warning != nil && s.rec.Warning.Reason == warnWaiting {
			// Someone answered: the waiting warning no longer holds.
			s.rec.State = ipc.StateRunning
			if err := s.proj.RemoveWarning(); err != nil {
				s.logger().Warn("remove warning file", zap.Error(err))
			}
		}
	}
	typ := map[string]string{ipc.AgentWorking: ipc.EventAgentWorking, ipc.AgentWaiting: ipc.EventAgentWaiting, ipc.AgentIdle: ipc.EventAgentIdle}[st]
	if typ == "" {
		return
	}
	msg := "agent " + st
	if reason != "" {
		msg += ": " + reason
	}
	s.emit(typ, msg, map[string]any{"agent": rec.Name, "state": st, "waiting_reason": reason, "conversation_id": rec.ConversationID, "since": now})
}

// checkBudget gives the budget's warning once the spec's share of a cap is
// spent, and reports whether a cap is reached.
func (s *Session) checkBudget() bool {
	t := s.rec.Tokens
	if t == nil || (s.spec.MaxTokens <= 0 && s.spec.MaxCostUSD <= 0) {
		return false
	}
	var used float64
	var what string
	if s.spec.MaxTokens > 0 {
		used, what = float64(t.Total())/float64(s.spec.MaxTokens), fmt.Sprintf("%d of %d tokens", t.Total(), s.spec.MaxTokens)
	}
	if spent := t.Spent(); s.spec.MaxCostUSD > 0 && spent > 0 {
		if c := spent / s.spec.MaxCostUSD; c > used {
			what = fmt.Sprintf("$%.2f of $%.2f", spent, s.spec.MaxCostUSD)
			if t.EstimatedUSD > t.CostUSD {
				what += " at list prices"
			}
			used = c
		}
	}
	if used >= 1 {
		return true
	}
	warnAt := s.spec.BudgetWarn
	if warnAt <= 0 {
		warnAt = 0.8
	}
	if used >= warnAt && !s.agent.budgetWarned {
		s.agent.budgetWarned = true
		text := fmt.Sprintf("sessiond: %d%% of this session's budget is spent (%s); it is stopped when all is. Finish the current step, commit or checkpoint, and report what you did and what comes next.", int(used*100), what)
		s.give(warning{reason: warnBudget, deadline: s.rec.Deadline, text: text})
		s.emit(ipc.EventBudget, text, map[string]any{"used": used, "tokens": t.Total(), "cost_usd": t.CostUSD})
	}
	return false
}

// changedBetweenTurns reports whether the project changed since the last
// checkpoint while no checkpoint runs or waits to run (one that does covers
// the moment already).
func (s *Session) changedBetweenTurns() bool {
	return !s.ckpt.busy && !s.ckpt.turnPending && s.watch != nil && s.watch.ChangedSince(s.ckpt.last)
}

// turnCheckpoint takes the checkpoint of an agent's turn, named after it;
// one that comes while another checkpoint runs is taken after it.
func (s *Session) turnCheckpoint(label string) {
	if s.ckpt.busy {
		s.ckpt.turn, s.ckpt.turnPending = label, true
		return
	}
	s.beginCheckpoint("turn", label)
}

// agentFacts is what the handoff says of the agent.
func agentFacts(rec ipc.Session) *state.AgentFacts {
	a := rec.Agent
	if a == nil {
		return nil
	}
	f := &state.AgentFacts{Name: a.Name, ConversationID: a.ConversationID, TranscriptPath: a.TranscriptPath,
		ResumedFrom: a.ResumedFrom, State: a.State, WaitingReason: a.WaitingReason, Turns: a.Turns}
	if t := rec.Tokens; t != nil {
		tokens := *t
		f.Tokens = &tokens
	}
	return f
}

// removeAgentFiles removes the files a root daemon handed the agent in the
// project's .sessiond.
func (s *Session) removeAgentFiles() {
	if s.agent == nil {
		return
	}
	if s.owner == nil {
		// A daemon of the session's own user wrote them in the session's
		// directory of its state dir: they may hold the user's settings'
		// environment (an API key), kept no longer than the session.
		for _, name := range []string{agent.ClaudeSettingsFile, agent.ClaudeMCPFile} {
			if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.logger().Warn("remove the agent's file", zap.String("file", name), zap.Error(err))
			}
		}
		return
	}
	if s.proj == nil {
		return
	}
	for _, name := range []string{agent.ClaudeSettingsFile, agent.ClaudeMCPFile} {
		if err := s.proj.RemoveAgentFile(s.id, name); err != nil {
			s.logger().Warn("remove the agent's file", zap.String("file", name), zap.Error(err))
		}
	}
}

// warnWaiting gives the warning of an agent that has waited for input
// nearly as long as waiting_timeout allows.
func (s *Session) warnWaiting() {
	end := s.timeline.waitEnd()
	what := "input"
	if s.rec.Agent != nil && s.rec.Agent.WaitingReason != "" {
		what = s.rec.Agent.WaitingReason
	}
	text := fmt.Sprintf("sessiond: the agent has waited %s for %s; the session is stopped at %s (waiting_timeout %s) unless it gets an answer.",
		s.deps.Clock.Now().Sub(s.timeline.waitingSince).Round(time.Second), what, end.Format(time.RFC3339), s.spec.WaitingTimeout)
	s.give(warning{reason: warnWaiting, deadline: end, text: text})
}

// kind is the first word of a waiting reason: permission, question, prompt.
func kind(reason string) string {
	k, _, _ := strings.Cut(reason, ":")
	return k
}

// agentFlush bounds how long an agent's token counts wait for the next
// write of the record.
const agentFlush = 2 * time.Second

// agentMarks are the agent fields whose change is written at once: its
// state, its conversation, its turns, what is amiss.
type agentMarks struct {
	state, reason, conv, transcript string
	turns, notices                  int
	warnedAt                        time.Time
	retry                           ipc.AgentRetry
}

func agentMark(rec ipc.Session) agentMarks {
	var m agentMarks
	if a := rec.Agent; a != nil {
		m = agentMarks{state: a.State, reason: a.WaitingReason, conv: a.ConversationID, transcript: a.TranscriptPath,
			turns: a.Turns, notices: len(a.Notices)}
		if r := a.Retrying; r != nil {
			m.retry = *r
		}
	}
	if rec.Warning != nil {
		m.warnedAt = rec.Warning.At
	}
	return m
}

// restoreAgent takes the agent of an adopted session back from its record:
// the adapter, and the transcript read on from where it is, its counts so
// far those of the record.
func (s *Session) restoreAgent() {
	rec := s.rec.Agent
	if rec == nil || s.agent != nil {
		return
	}
	a, err := agent.Lookup(rec.Name)
	if err != nil {
		return
	}
	s.agent = &agentRun{adapter: a, since: s.startedAt, located: true,
		plan: agent.Plan{Agent: rec.Name, Integrated: rec.Integrated, Interactive: rec.Interactive}}
	if rec.State == ipc.AgentWaiting && rec.StateSince != nil {
		s.timeline.waitingSince = *rec.StateSince
	}
	if rec.TranscriptPath == "" {
		return
	}
	s.agent.tr = a.Transcript(rec.TranscriptPath, agent.TranscriptOptions{Interactive: rec.Interactive, EventsSince: s.deps.Clock.Now(), Files: s.files()})
	if s.agent.tr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	up, _ := s.agent.tr.Read(ctx)
	cancel()
	// What the record counted stays this session's; the rest of the
	// transcript so far is the base.
	var counted agent.Usage
	if t := s.rec.Tokens; t != nil {
		counted = agent.Usage{InputTokens: t.Input, OutputTokens: t.Output, CacheReadTokens: t.CacheRead,
			CacheWriteTokens: t.CacheWrite, CostUSD: t.CostUSD, CostKnown: t.CostKnown, EstimatedUSD: t.EstimatedUSD}
	}
	s.agent.base, s.agent.baseKnown = up.Usage.Since(counted), true
}

// applyRetry keeps the agent's spell of API retries: a failed request
// begins one or goes on with it, and anything that shows the API answered
// (a response, a tool used, a turn's end; not the agent's own end) ends
// it. A spell's start is an event, agent_retrying.
func (s *Session) applyRetry(ev agent.Event, now time.Time) {
	rec := s.rec.Agent
	if r := ev.Retry; r != nil {
		at := ev.At
		if at.IsZero() || at.After(now) {
			at = now
		}
		reason := state.EscapeText(r.Reason)
		if rec.Retrying == nil {
			rec.Retrying = &ipc.AgentRetry{Since: at}
			defer s.emit(ipc.EventAgentRetrying, "agent retrying its API: "+reason+retryCount(r.Attempt, r.Max),
				map[string]any{"agent": rec.Name, "reason": reason, "attempt": r.Attempt, "max_attempts": r.Max, "since": at})
		}
		rec.Retrying.Attempts, rec.Retrying.MaxAttempts, rec.Retrying.Reason, rec.Retrying.NextAt = r.Attempt, r.Max, reason, r.Next
		return
	}
	if rec.Retrying != nil && (ev.Answered || ev.Tool != "" || ev.TurnEnded || ev.TurnStarted || ev.Compacting) {
		rec.Retrying = nil
	}
}

// retryCount is " (attempt 3 of 10)", or " (attempt 3)" without a bound.
func retryCount(attempt, max int) string {
	if max > 0 {
		return fmt.Sprintf(" (attempt %d of %d)", attempt, max)
	}
	return fmt.Sprintf(" (attempt %d)", attempt)
}

// transcriptPoll is how often a working agent's transcript is read
// between its hooks: a request to its API that fails and is retried shows
// there and nowhere else.
const transcriptPoll = 5 * time.Second

// scheduleRead sets when the transcript is read next: transcriptPoll from
// now while the agent works, never otherwise. The caller arms the timer.
func (s *Session) scheduleRead() {
	if a := s.agent; a != nil && (a.tr != nil || !a.located) && s.rec.Agent != nil && (s.rec.Agent.State == ipc.AgentWorking || s.promptUnheard()) {
		s.timeline.readAt = s.deps.Clock.Now().Add(transcriptPoll)
		return
	}
	s.timeline.readAt = time.Time{}
}

// promptUnheard reports whether the agent waits for a prompt that no hook
// of its tells of when it comes: an interactive Codex, whose turn's start
// is read off its rollout (task_started), polled meanwhile.
func (s *Session) promptUnheard() bool {
	a, rec := s.agent, s.rec.Agent
	return a != nil && rec != nil && a.plan.Interactive && a.adapter.Name() == "codex" &&
		rec.State == ipc.AgentWaiting && rec.WaitingReason == agent.WaitPrompt
}

// pollTranscript reads what the transcript gained since the last read and
// writes the record when that changed what it says. It reports whether a
// budget is spent.
func (s *Session) pollTranscript() (spent bool) {
	if s.agent == nil {
		return false
	}
	if s.agent.tr == nil && s.rec.Agent != nil && s.rec.Agent.TranscriptPath == "" {
		// An agent that tells of its conversation only at a turn's end
		// (Codex): its transcript is found on disk, for its usage and its
		// limits meanwhile.
		var ev agent.Event
		s.locateConversation(&ev)
		if ev.ConversationID != "" || ev.TranscriptPath != "" {
			s.applyAgentEvent(ev)
		}
	}
	if s.agent.tr == nil {
		s.scheduleRead()
		return false
	}
	before, off := agentMark(s.rec), s.agent.tr.Offset()
	spent = s.readTranscript()
	s.scheduleRead()
	switch {
	case s.agent.tr.Offset() == off:
		// Nothing new.
	case agentMark(s.rec) != before:
		_ = s.commit()
	default:
		s.publish()
		s.recDirty = true
	}
	return spent
}

// newConversation reports whether an event that names another conversation
// than the session's is the agent's own move to a new one: its SessionStart
// after a /clear, or any event whose transcript exists (a resume by name).
func (s *Session) newConversation(ev agent.Event) bool {
	if ev.SessionStarted && ev.Source == "clear" {
		return true
	}
	if ev.TranscriptPath == "" {
		return false
	}
	fi, err := s.files().Stat(ev.TranscriptPath)
	return err == nil && fi.Mode().IsRegular()
}

func sourceOr(source, hook string) string {
	if source != "" {
		return hook + ", " + source
	}
	return hook
}
