package state

import "time"

// AgentFacts is what a handoff says of the session's agent: which one, its
// conversation (to resume it), what it was doing at the end and its use of
// the model.
type AgentFacts struct {
	Name           string `json:"name"`
	ConversationID string `json:"conversation_id,omitempty"`
	TranscriptPath string `json:"transcript_path,omitempty"`
	// ResumedFrom is the conversation the session continued, if any.
	ResumedFrom string `json:"resumed_from,omitempty"`
	// State and WaitingReason are the agent's at the end: a session
	// stopped while its agent waited says for what.
	State         string  `json:"state,omitempty"`
	WaitingReason string  `json:"waiting_reason,omitempty"`
	Turns         int     `json:"turns,omitempty"`
	Tokens        *Tokens `json:"tokens,omitempty"`
}

// Tokens is an agent's use of its model: the token counts and, where the
// agent reports it, the cost.
type Tokens struct {
	Input      int64   `json:"input"`
	Output     int64   `json:"output"`
	CacheRead  int64   `json:"cache_read"`
	CacheWrite int64   `json:"cache_write"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
	CostKnown  bool    `json:"cost_known,omitempty"`
}

// Total is every token counted.
func (t *Tokens) Total() int64 {
	if t == nil {
		return 0
	}
	return t.Input + t.Output + t.CacheRead + t.CacheWrite
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

func (a *AgentFacts) bound() {
	for _, f := range []*string{&a.Name, &a.ConversationID, &a.ResumedFrom, &a.State, &a.WaitingReason} {
		*f = bound(*f, maxHandoffText)
	}
	a.TranscriptPath = bound(a.TranscriptPath, maxPathLen)
}
