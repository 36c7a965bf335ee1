package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"time"
)

// Limits that SessionState.Bound enforces, counted in characters (runes).
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

// SessionState is a project's rolling state, session_state.json: what the
// last session did, what to do next, the plan, open blockers and progress.
// Its schema is the one of the seed's session-lifecycle feature, extended
// with task counts and the last session's id and end reason.
type SessionState struct {
	LastSession    *LastSession `json:"last_session,omitempty"`
	NextActions    []string     `json:"next_actions"`
	CurrentPlan    string       `json:"current_plan,omitempty"`
	ActiveBlockers []Blocker    `json:"active_blockers"`
	ProgressPct    float64      `json:"progress_pct"`
	TasksDone      int          `json:"tasks_done,omitempty"`
	TasksTotal     int          `json:"tasks_total,omitempty"`

	// The fields below extend the seed's schema.

	// NextFrom says where next_actions came from: "report" (the agent's
	// words) or "features" (the feature list's open items), so that a
	// start after the list changed recomputes only the latter.
	NextFrom string `json:"next_from,omitempty"`
	// PassingTasks are the feature list's passing items when the state was
	// written, to tell what changed since.
	PassingTasks []TaskID `json:"passing_tasks,omitempty"`
	// BlockerSeq is the last blocker id handed out: ids are not reused.
	BlockerSeq int `json:"blocker_seq,omitempty"`
	// SessionsSince counts the sessions after last_session that did
	// nothing (no report, no change, nothing completed); RecentRuns tells
	// how the last of them ended.
	SessionsSince int   `json:"sessions_since,omitempty"`
	RecentRuns    []Run `json:"recent_runs,omitempty"`
	// LastRestore is the last checkpoint restored into the work tree.
	LastRestore *Restore `json:"last_restore,omitempty"`
	// Conversation is the last agent conversation of the project's
	// sessions, for the next one to resume.
	Conversation *Conversation `json:"conversation,omitempty"`
}

// Next-action sources (SessionState.NextFrom).
const (
	NextFromReport   = "report"
	NextFromFeatures = "features"
)

// Run is how a session ended, for sessions that did nothing worth a
// summary.
type Run struct {
	SessionID string    `json:"session_id"`
	EndReason string    `json:"end_reason"`
	EndedAt   time.Time `json:"ended_at"`
}

// Restore records a restore of the work tree to a checkpoint.
type Restore struct {
	Checkpoint string    `json:"checkpoint"`
	At         time.Time `json:"at"`
}

// Limits of the extended fields.
const (
	MaxRecentRuns   = 5
	MaxPassingTasks = 10000
)

// LastSession describes the session that last ended in the project.
type LastSession struct {
	Summary        string    `json:"summary"`
	CompletedTasks []TaskID  `json:"completed_tasks"`
	Timestamp      time.Time `json:"timestamp,omitzero"`
	SessionID      string    `json:"session_id,omitempty"`
	EndReason      string    `json:"end_reason,omitempty"`
}

// Blocker is a question that needs a human before work can go on.
type Blocker struct {
	ID       int    `json:"id"`
	Question string `json:"question"`
	Priority string `json:"priority"`
}

// timestampLayouts are accepted when reading last_session.timestamp: RFC 3339
// as sessiond writes it, and the zone-less ISO form (Python's isoformat())
// that the seed's files hold, read as local time.
var timestampLayouts = []string{
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
}

// UnmarshalJSON decodes a LastSession, accepting a timestamp with or without
// a zone (seed files have none) and an empty or null one as "unknown".
func (l *LastSession) UnmarshalJSON(data []byte) error {
	type plain LastSession
	var aux struct {
		plain
		Timestamp json.RawMessage `json:"timestamp"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*l = LastSession(aux.plain)
	l.Timestamp = time.Time{}
	if len(aux.Timestamp) == 0 || string(aux.Timestamp) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(aux.Timestamp, &s); err != nil {
		return fmt.Errorf("last_session.timestamp: want a string, got %.40s", aux.Timestamp)
	}
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		for _, layout := range timestampLayouts {
			if t, err = time.ParseInLocation(layout, s, time.Local); err == nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("last_session.timestamp: %q is not an RFC 3339 time", s)
	}
	if t.Year() < 0 || t.Year() > 9999 {
		return fmt.Errorf("last_session.timestamp: %q is out of range", s)
	}
	l.Timestamp = t
	return nil
}

// Bound enforces the limits that keep the state small and displayable:
// summary ≤ MaxSummaryLen characters, at most MaxNextActions non-empty next
// actions of ≤ MaxActionLen, plan ≤ MaxPlanLen, at most MaxBlockers blockers
// with questions ≤ MaxQuestionLen, at most MaxCompletedTasks completed tasks
// (the latest), progress clamped to 0–100 (NaN and infinities become 0) and
// task counts not negative. Text is cut on character boundaries with a
// trailing "…", invalid UTF-8 is replaced, and control characters are
// escaped as StoreText does (a NUL too). Nil lists become empty ones, so
// that they are written as [] rather than null.
func (s *SessionState) Bound() {
	if l := s.LastSession; l != nil {
		l.Summary = bound(l.Summary, MaxSummaryLen)
		if len(l.CompletedTasks) > MaxCompletedTasks {
			l.CompletedTasks = l.CompletedTasks[len(l.CompletedTasks)-MaxCompletedTasks:]
		}
		if l.CompletedTasks == nil {
			l.CompletedTasks = []TaskID{}
		}
		for i, id := range l.CompletedTasks {
			if !id.number {
				l.CompletedTasks[i].text = bound(id.text, maxIDLen)
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
		if !id.number {
			s.PassingTasks[i].text = bound(id.text, maxIDLen)
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
	s.Bound()
	return &s, nil
}

// SaveSessionState bounds s (see Bound) and writes it atomically, mode
// 0600, to the project's .sessiond, creating that directory if needed.
func (p *Project) SaveSessionState(s *SessionState) error {
	if s == nil {
		return errors.New("save session state: nil state")
	}
	s.Bound()
	data, err := marshalJSON(s)
	if err != nil {
		return fmt.Errorf("save session state: %w", err)
	}
	if err := p.writeStateReusing(SessionStateFile, data); err != nil {
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
