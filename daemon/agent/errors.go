package agent

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrUnknownAgent is an agent setting that names no adapter.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrBadLaunch is a Launch that Prepare cannot use.
	ErrBadLaunch = errors.New("bad launch")
	// ErrBadPayload is a hook payload with nothing usable in it.
	ErrBadPayload = errors.New("bad hook payload")
	// ErrUnknownEvent is a hook payload for an event the adapter does not
	// know; the Event returned with it still carries what the payload said
	// of the conversation.
	ErrUnknownEvent = errors.New("unknown hook event")
	// ErrBadConversationID is a conversation id that is not a UUID.
	ErrBadConversationID = errors.New("conversation id is not a UUID")
	// ErrNoConversation is a conversation that cannot be found on disk.
	ErrNoConversation = errors.New("conversation not found")
	// ErrAmbiguousConversation is a search that found several.
	ErrAmbiguousConversation = errors.New("several conversations match")
	// ErrNoTranscript is a transcript file that is not there (yet, or any
	// more); it wraps fs.ErrNotExist too.
	ErrNoTranscript = errors.New("transcript not found")
	// ErrNotResumable is an agent or command line that cannot resume.
	ErrNotResumable = errors.New("cannot resume")
)
