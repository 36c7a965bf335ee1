package state

import "github.com/sessiond/sessiond/ipc/format"

// The agent's facts of a handoff and of the session state (package format).
type (
	AgentFacts   = format.AgentFacts
	Tokens       = format.Tokens
	Conversation = format.Conversation
)

func boundAgent(a *AgentFacts) {
	for _, f := range []*string{&a.Name, &a.ConversationID, &a.ResumedFrom, &a.State, &a.WaitingReason} {
		*f = bound(*f, maxHandoffText)
	}
	a.TranscriptPath = bound(a.TranscriptPath, maxPathLen)
}
