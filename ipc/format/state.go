package format

import (
	"encoding/json"
	"fmt"
	"time"
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

// Conversation is the project's last agent conversation, in its session
// state: what a session started with resume = "always", or with
// `sessionctl start --resume`, continues.
type Conversation struct {
	Agent          string    `json:"agent"`
	ID             string    `json:"id"`
	TranscriptPath string    `json:"transcript_path,omitempty"`
	SessionID      string    `json:"session_id"`
	EndedAt        time.Time `json:"ended_at"`
}

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
