package session

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/agent"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Limit is the end reason of a session its agent's usage limit ended.
const (
	Limit        Reason = ipc.EndLimit
	HostRebooted Reason = ipc.EndHostRebooted
	Cancelled    Reason = ipc.EndCancelled
)

// Waits for limits that say no reset: a quota is tried again after an
// hour, a throttle the agent gave up on after five minutes.
const (
	quotaRetry    = time.Hour
	throttleRetry = 5 * time.Minute
)

// onLimit takes a usage limit the agent hit, told by source: the agent
// turns limited, everyone is told, and on_limit decides what follows. It
// reports whether the session must stop now (on_limit = "stop").
func (s *Session) onLimit(l agent.Limit, source string) (stop bool) {
	rec := s.rec.Agent
	if rec == nil || l.Class == agent.LimitThrottle && !l.GaveUp {
		// A throttle the agent still retries is its own business.
		return false
	}
	now := s.deps.Clock.Now()
	policy := s.spec.LimitPolicy()
	lim := &ipc.AgentLimit{Class: l.Class, Account: rec.Account, Since: now, ResetsAt: l.ResetsAt,
		Message: state.EscapeText(l.Message), Source: source, Continue: ipc.ContinueNone}
	if old := rec.Limit; old != nil && rec.State == ipc.AgentLimited {
		// The same limit, told again (its hook, then its transcript): it
		// keeps its start and its pause, and takes a later reset.
		lim.Since, lim.PausedSeconds = old.Since, old.PausedSeconds
		if lim.ResetsAt.IsZero() || !old.ResetsAt.IsZero() && !old.ResetsAt.Before(lim.ResetsAt) {
			lim.ResetsAt = old.ResetsAt
		}
		if old.Class == lim.Class && old.ResetsAt.Equal(lim.ResetsAt) {
			return false
		}
	}
	if policy == config.OnLimitWait && (l.Class == agent.LimitQuota || l.Class == agent.LimitThrottle) {
		at := lim.ResetsAt
		if at.IsZero() || !at.After(now) {
			wait := quotaRetry
			if l.Class == agent.LimitThrottle {
				wait = throttleRetry
			}
			at = now.Add(wait)
		}
		lim.ContinueAt = at.Add(time.Duration(rand.Int64N(int64(s.spec.Jitter()) + 1))).Truncate(time.Second)
		lim.Continue = s.continueMode()
		if s.spec.PausesDeadline() {
			pause := lim.ContinueAt.Sub(lim.Since).Round(time.Second)
			if by := pause - time.Duration(lim.PausedSeconds)*time.Second; by > 0 {
				s.timeline = s.timeline.extend(by, now)
				s.rec.Deadline, s.rec.WarnAt, s.rec.DeadlineWarned = s.timeline.deadline, s.timeline.warnAt, s.timeline.warned
				lim.PausedSeconds = int64(pause / time.Second)
			}
		}
		if lim.Continue == ipc.ContinueType {
			s.timeline.continueAt = lim.ContinueAt
		}
	}
	rec.Limit = lim
	rec.Retrying = nil
	if s.deps.OnLimit != nil {
		s.deps.OnLimit(s, *lim)
	}
	s.setAgentState(ipc.AgentLimited, "", now)
	_ = s.commit()
	msg := "agent limited (" + lim.Words(now) + ")"
	s.emit(ipc.EventAgentLimited, msg, map[string]any{"agent": rec.Name, "class": lim.Class, "account": lim.Account,
		"resets_at": lim.ResetsAt, "continue": lim.Continue, "continue_at": lim.ContinueAt, "message": lim.Message, "on_limit": policy})
	s.logger().Info("agent limited", zap.String("class", lim.Class), zap.Time("resets_at", lim.ResetsAt), zap.String("on_limit", policy))
	return policy == config.OnLimitStop
}

// takeLimitStop begins the stop on_limit = "stop" asked for, if it did.
func (s *Session) takeLimitStop() bool {
	if !s.limitStop {
		return false
	}
	s.limitStop = false
	s.beginStop(Limit, -1)
	return true
}

// continueMode is how the session goes on after its limit resets: the
// agent itself where its own auto-continue or retry watchdog is on, typed
// into an interactive agent's terminal, else its command resumed once it
// exits.
func (s *Session) continueMode() string {
	switch {
	case s.agentContinuesItself():
		return ipc.ContinueAgent
	case s.term != nil && s.agent != nil && s.agent.plan.Interactive:
		return ipc.ContinueType
	case s.agent != nil && s.agent.adapter.Name() != agent.Generic.Name():
		return ipc.ContinueResume
	}
	return ipc.ContinueNone
}

// agentContinuesItself reports whether the agent waits out its limits on
// its own: Claude Code with CLAUDE_CODE_RETRY_WATCHDOG=1 or
// CLAUDE_CODE_AUTO_CONTINUE=1 in its environment, or autoContinue in the
// settings sessiond hands it, so that nothing is continued twice.
func (s *Session) agentContinuesItself() bool {
	if s.agent == nil || s.agent.adapter.Name() != agent.ClaudeCode.Name() {
		return false
	}
	for _, kv := range s.env() {
		k, v, _ := strings.Cut(kv, "=")
		if (k == "CLAUDE_CODE_RETRY_WATCHDOG" || k == "CLAUDE_CODE_AUTO_CONTINUE") && v != "" && v != "0" && v != "false" {
			return true
		}
	}
	return s.agent.plan.AutoContinue
}

// continueAfterLimit types "continue" into an interactive agent's terminal
// once its limit has reset (and its jitter passed).
func (s *Session) continueAfterLimit() {
	rec := s.rec.Agent
	if rec == nil || rec.State != ipc.AgentLimited || s.term == nil {
		return
	}
	h := s.term.holder
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Send(ctx, "continue", true); err != nil {
			s.logger().Warn("type continue after the limit reset", zap.Error(err))
		}
	}()
	now := s.deps.Clock.Now()
	lim := rec.Limit
	s.setAgentState(ipc.AgentWorking, "", now)
	_ = s.commit()
	s.emit(ipc.EventContinued, "limit reset: continue typed into the agent's terminal", map[string]any{"agent": rec.Name, "class": lim.Class, "limited_since": lim.Since})
}

// limitAtExit finds the limit an exiting headless agent stopped at, when
// no hook told of it: in the last lines of its output (Claude Code's
// stream-json rate_limit_event and result, Codex's --json errors, their
// messages). It is only looked for after a failed exit.
func (s *Session) limitAtExit(code int) {
	a := s.agent
	if a == nil || code == 0 || s.rec.Agent == nil || s.rec.Agent.State == ipc.AgentLimited || s.onTerminal() {
		return
	}
	if s.rec.Agent.TranscriptPath == "" {
		// An agent that told nothing yet (Codex tells at a turn's end):
		// its conversation, found on disk, may say more, and is the one a
		// continuation resumes.
		var ev agent.Event
		s.locateConversation(&ev)
		if ev.ConversationID != "" || ev.TranscriptPath != "" {
			s.applyAgentEvent(ev)
		}
	}
	s.readTranscript()
	if s.rec.Agent.State == ipc.AgentLimited {
		return
	}
	if l, ok := agent.OutputLimit(s.deps.Output.Tail(s.logPath(), 40), s.deps.Clock.Now()); ok {
		s.onLimit(l, "output")
	}
}

// limitHandoff is what the handoff tells of a limit: when the work may go
// on, and whether sessiond goes on with it.
func limitHandoff(l *ipc.AgentLimit) string {
	what := fmt.Sprintf("the agent hit a usage limit (%s", l.Class)
	if l.Account != "" {
		what += ", account " + l.Account
	}
	what += ")"
	if l.Message != "" {
		what += ": " + l.Message
	}
	switch {
	case l.Continue == ipc.ContinueResume && !l.ContinueAt.IsZero():
		what += fmt.Sprintf("; sessiond resumes its conversation at %s", l.ContinueAt.Format(time.RFC3339))
	case !l.ResetsAt.IsZero():
		what += fmt.Sprintf("; it may go on after %s", l.ResetsAt.Format(time.RFC3339))
	case l.Class == agent.LimitSpend:
		what += "; it may go on once the account has credit again"
	case l.Class == agent.LimitAuth:
		what += "; it may go on once the agent is logged in again (or its key is replaced)"
	}
	return what
}
