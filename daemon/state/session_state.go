package state

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"

	"github.com/sessiond/sessiond/ipc/format"
)

// Limits that BoundSessionState enforces, counted in characters (runes).
const (
	MaxSummaryLen     = 500
	MaxNextActions    = 5
	MaxActionLen      = 200
	MaxPlanLen        = 2000
	MaxBlockers       = 20
	MaxQuestionLen    = 500
	MaxPriorityLen    = 20
	MaxCompletedTasks = 100
	maxIDLen          = 200
	maxPathLen        = 4096
)

// The types of session_state.json (package format).
type (
	SessionState = format.SessionState
	Run          = format.Run
	Restore      = format.Restore
	LastSession  = format.LastSession
	Blocker      = format.Blocker
)

// Next-action sources (SessionState.NextFrom).
const (
	NextFromReport   = format.NextFromReport
	NextFromFeatures = format.NextFromFeatures
)

// Limits of the extended fields.
const (
	MaxRecentRuns   = 5
	MaxPassingTasks = 10000
)

// BoundSessionState enforces the limits that keep the state small and displayable:
// summary ≤ MaxSummaryLen characters, at most MaxNextActions non-empty next
// actions of ≤ MaxActionLen, plan ≤ MaxPlanLen, at most MaxBlockers blockers
// with questions ≤ MaxQuestionLen, at most MaxCompletedTasks completed tasks
// (the latest), progress clamped to 0–100 (NaN and infinities become 0) and
// task counts not negative. Text is cut on character boundaries with a
// trailing "…", invalid UTF-8 is replaced, and control characters are
// escaped as StoreText does (a NUL too). Nil lists become empty ones, so
// that they are written as [] rather than null.
func BoundSessionState(s *SessionState) {
	if l := s.LastSession; l != nil {
		l.Summary = bound(l.Summary, MaxSummaryLen)
		if len(l.CompletedTasks) > MaxCompletedTasks {
			l.CompletedTasks = l.CompletedTasks[len(l.CompletedTasks)-MaxCompletedTasks:]
		}
		if l.CompletedTasks == nil {
			l.CompletedTasks = []TaskID{}
		}
		for i, id := range l.CompletedTasks {
			if !id.IsNumber() {
				l.CompletedTasks[i] = id.WithText(bound(id.String(), maxIDLen))
			}
		}
		l.SessionID = bound(l.SessionID, maxIDLen)
		l.EndReason = bound(l.EndReason, maxIDLen)
	}
	s.NextActions = boundList(s.NextActions, MaxNextActions, MaxActionLen)
	s.CurrentPlan = bound(s.CurrentPlan, MaxPlanLen)
	blockers := make([]Blocker, 0, min(len(s.ActiveBlockers), MaxBlockers))
	for _, b := range s.ActiveBlockers {
		if len(blockers) == MaxBlockers {
			break
		}
		b.Question = bound(strings.TrimSpace(b.Question), MaxQuestionLen)
		b.Priority = bound(strings.TrimSpace(b.Priority), MaxPriorityLen)
		if b.Question != "" {
			blockers = append(blockers, b)
		}
	}
	s.ActiveBlockers = blockers
	if c := s.Conversation; c != nil {
		c.Agent, c.ID, c.SessionID = bound(c.Agent, maxIDLen), bound(c.ID, maxIDLen), bound(c.SessionID, maxIDLen)
		c.TranscriptPath = bound(c.TranscriptPath, maxPathLen)
		if c.ID == "" {
			s.Conversation = nil
		}
	}
	switch {
	case math.IsNaN(s.ProgressPct) || math.IsInf(s.ProgressPct, 0):
		s.ProgressPct = 0
	case s.ProgressPct < 0:
		s.ProgressPct = 0
	case s.ProgressPct > 100:
		s.ProgressPct = 100
	}
	if len(s.RecentRuns) > MaxRecentRuns {
		s.RecentRuns = s.RecentRuns[len(s.RecentRuns)-MaxRecentRuns:]
	}
	for i := range s.RecentRuns {
		s.RecentRuns[i].SessionID = bound(s.RecentRuns[i].SessionID, maxIDLen)
		s.RecentRuns[i].EndReason = bound(s.RecentRuns[i].EndReason, maxIDLen)
	}
	if len(s.PassingTasks) > MaxPassingTasks {
		s.PassingTasks = s.PassingTasks[:MaxPassingTasks]
	}
	for i, id := range s.PassingTasks {
		if !id.IsNumber() {
			s.PassingTasks[i] = id.WithText(bound(id.String(), maxIDLen))
		}
	}
	switch s.NextFrom {
	case "", NextFromReport, NextFromFeatures:
	default:
		s.NextFrom = ""
	}
	if r := s.LastRestore; r != nil {
		r.Checkpoint = bound(r.Checkpoint, maxIDLen)
	}
	s.SessionsSince = max(s.SessionsSince, 0)
	s.BlockerSeq = max(s.BlockerSeq, 0)
	for _, b := range s.ActiveBlockers {
		s.BlockerSeq = max(s.BlockerSeq, b.ID)
	}
	s.TasksTotal = max(s.TasksTotal, 0)
	s.TasksDone = max(s.TasksDone, 0)
	if s.TasksTotal > 0 {
		s.TasksDone = min(s.TasksDone, s.TasksTotal)
	}
}

// LoadSessionState reads the project's session state. It returns nil and
// no error when there is none. A corrupt or oversized file (over
// MaxStateSize) gives nil and a *CorruptError (errors.Is(err, ErrCorrupt)),
// the file having been moved aside: the caller warns and starts a new
// session. A symlink, FIFO or device in its place is refused (ErrFileType)
// and left alone. The state returned is bounded.
func (p *Project) LoadSessionState() (*SessionState, error) {
	var s SessionState
	if err := p.readStateJSON(SessionStateFile, MaxStateSize, &s); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("load session state: %w", err)
	}
	BoundSessionState(&s)
	return &s, nil
}

// SaveSessionState bounds s (see BoundSessionState) and writes it atomically, mode
// 0600, to the project's .sessiond, creating that directory if needed.
func (p *Project) SaveSessionState(s *SessionState) error {
	if s == nil {
		return errors.New("save session state: nil state")
	}
	BoundSessionState(s)
	e, err := encodeJSON(s)
	if err != nil {
		return fmt.Errorf("save session state: %w", err)
	}
	defer e.put()
	if err := p.writeStateReusing(SessionStateFile, e.indented); err != nil {
		return fmt.Errorf("save session state: %w", err)
	}
	return nil
}

// ClearSessionState removes the project's session state, and the earlier
// one its spare holds. A project without one is not an error.
func (p *Project) ClearSessionState() error {
	if err := p.removeState(SessionStateFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear session state: %w", err)
	}
	return nil
}

// LoadSessionState reads the session state of project with the caller's own
// rights; see Project.LoadSessionState.
func LoadSessionState(project string) (*SessionState, error) {
	p, err := OpenProject(project, nil)
	if err != nil {
		return nil, fmt.Errorf("load session state: %w", err)
	}
	return p.LoadSessionState()
}

// SaveSessionState bounds s and writes it to project's .sessiond with the
// caller's own rights, creating the directory and keeping it out of git
// (see ProjectDir); see Project.SaveSessionState.
func SaveSessionState(project string, s *SessionState) error {
	if s == nil {
		return errors.New("save session state: nil state")
	}
	p, err := ensureProject(project)
	if err != nil {
		return fmt.Errorf("save session state: %w", err)
	}
	return p.SaveSessionState(s)
}

// ClearSessionState removes project's session state with the caller's own
// rights. A project without one is not an error.
func ClearSessionState(project string) error {
	p, err := OpenProject(project, nil)
	if err != nil {
		return fmt.Errorf("clear session state: %w", err)
	}
	return p.ClearSessionState()
}
