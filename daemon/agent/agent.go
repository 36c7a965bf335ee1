package agent

import (
	"context"
	"io/fs"
	"os"
	"time"

	"github.com/sessiond/sessiond/daemon/state"
)

// Adapter is what sessiond knows of one agent. Its methods are safe for
// concurrent use: an adapter holds no state of its own.
type Adapter interface {
	// Name is the agent's name in the spec and the record: "claude-code",
	// "codex", "generic".
	Name() string
	// Interactive reports whether argv runs the agent for a person at a
	// terminal rather than headless (claude without -p, codex without
	// exec). Generic commands are never known to be interactive.
	Interactive(argv []string) bool
	// Prepare returns the command line to run and writes the files the
	// agent needs under l.SessionDir. What it cannot integrate it leaves
	// out and says so in Plan.Notices; an error means the launch itself is
	// unusable (no command, a relative path, an unwritable directory).
	Prepare(ctx context.Context, l Launch) (Plan, error)
	// Resume returns argv changed to continue conversation id instead of
	// starting a new one. The id must be a UUID.
	Resume(argv []string, conversationID string) ([]string, error)
	// ParseHook decodes one payload of the agent's hook or notify program.
	// interactive is Plan.Interactive: the end of a turn is waiting in an
	// interactive session and idle in a headless one. A payload with
	// nothing usable is an error; a usable one with something amiss (an id
	// that is not a UUID, a truncated payload) is an Event with Notices.
	ParseHook(payload []byte, interactive bool) (Event, error)
	// Locate finds the agent's conversation on disk: by its id when q has
	// one, else the one conversation started in q.ProjectDir since q.Since.
	// It returns ErrNoConversation when there is none and
	// ErrAmbiguousConversation when several match.
	Locate(ctx context.Context, q Query) (Conversation, error)
	// Transcript returns a reader of the transcript at path, or nil when
	// the agent keeps none that sessiond can read.
	Transcript(path string, opts TranscriptOptions) *Transcript
}

// Launch is what Prepare is given about one start of a session's command.
type Launch struct {
	// Argv is the command as the spec gives it; Argv[0] is the executable.
	Argv []string
	// SessionID is sessiond's id of the session.
	SessionID string
	// SessionDir is the session's directory under the daemon's state dir;
	// Prepare writes the agent's files here (created 0700 if missing).
	SessionDir string
	// ProjectDir is where the command runs (absolute, symlinks resolved).
	ProjectDir string
	// Sessionctl is the absolute path of the sessionctl binary the hooks
	// and the MCP server run.
	Sessionctl string
	// Socket is the daemon's socket, handed to the MCP server of agents
	// that do not pass their environment on to it (Codex). Empty: the
	// server finds the socket as sessionctl always does.
	Socket string
	// Resume is the conversation to continue; "" starts a new one.
	Resume string
	// TTY is whether the command runs on a terminal.
	TTY bool
	// MCP is whether to offer the agent sessionctl's MCP server.
	MCP bool
	// Budget is the session's spending cap, for agents that can enforce
	// one themselves.
	Budget Budget
	// Env is the environment the command runs with (K=V), for HOME,
	// CLAUDE_CONFIG_DIR and CODEX_HOME; nil means this process's.
	Env []string
	// Write, when set, writes the agent's files instead of SessionDir:
	// where the agent, running as another user than the daemon, can read
	// them. It returns the file's path.
	Write func(name string, data []byte) (path string, err error)
	// Files reads the user's own files the command line or the environment
	// names (--settings, $CODEX_HOME/config.toml) with the session user's
	// rights; nil is the daemon's own.
	Files FS
}

// FS is how an adapter reads a user's files: with the session user's
// rights, non-blocking, regular files only, bounded (state.Files is one).
type FS interface {
	Open(path string) (*os.File, error)
	ReadFile(path string, limit int64) ([]byte, error)
	Stat(path string) (fs.FileInfo, error)
	ReadDir(path string, max int) ([]fs.FileInfo, error)
	Resolve(path string) (string, error)
}

// filesOr is f, or for nil the daemon's own files.
func filesOr(f FS) FS {
	if f == nil {
		return state.FilesOf(nil)
	}
	return f
}

// maxListed bounds the entries an adapter reads of one directory of an
// agent's home.
const maxListed = 100000

// Budget is a session's cap on tokens and cost; zero fields are no cap.
type Budget struct {
	MaxTokens  int64
	MaxCostUSD float64
}

// Plan is what Prepare decided.
type Plan struct {
	// Agent is the adapter's name.
	Agent string
	// Argv is the command line to run.
	Argv []string
	// Integrated is whether sessiond will hear from the agent (its hooks
	// or notify program are installed); false means the command runs as it
	// is and the agent's state stays unknown.
	Integrated bool
	// Interactive is whether the agent runs for a person: a terminal and
	// an interactive command line. Pass it to ParseHook.
	Interactive bool
	// InitialState is the agent's state until its first event.
	InitialState State
	// InitialWaiting is the reason when InitialState is StateWaiting.
	InitialWaiting string
	// ConversationID is the conversation's id when it is known before the
	// start (chosen by sessiond, given by the user, or resumed); "" until
	// a hook or Locate tells.
	ConversationID string
	// TranscriptPath is where the agent will write the conversation, when
	// known before the start; it may not exist yet.
	TranscriptPath string
	// Resumed is whether Argv continues Launch.Resume.
	Resumed bool
	// AutoContinue: the agent's own settings make it wait out its limits
	// (Claude Code's retry watchdog), so sessiond continues nothing.
	AutoContinue bool
	// Files are the files Prepare wrote.
	Files []string
	// Notices say what could not be integrated, and why, in a sentence
	// each (for the session's log and handoff).
	Notices []string
}

// State is what an agent is doing, as its own events tell.
type State string

// The agent states of the record.
const (
	StateWorking State = "working"
	StateWaiting State = "waiting"
	StateIdle    State = "idle"
	StateUnknown State = "unknown"
)

// Waiting reasons, the first word of Event.WaitingReason.
const (
	WaitPermission = "permission"
	WaitQuestion   = "question"
	WaitPrompt     = "prompt"
)

// Event is what one hook payload or transcript line says.
type Event struct {
	// Agent is the adapter's name.
	Agent string `json:"agent"`
	// Hook is the agent's own name for the event: "SessionStart",
	// "agent-turn-complete", "task_started".
	Hook string `json:"hook"`
	// ConversationID and TranscriptPath are "" when the payload has none.
	ConversationID string `json:"conversation_id,omitempty"`
	TranscriptPath string `json:"transcript_path,omitempty"`
	// Cwd is the agent's working directory, when given.
	Cwd string `json:"cwd,omitempty"`
	// State is the agent's state after the event; "" leaves it as it was.
	State State `json:"state,omitempty"`
	// WaitingReason says what the agent waits for when State is waiting:
	// "permission: Bash", "question: ...", "prompt" (the next prompt).
	WaitingReason string `json:"waiting_reason,omitempty"`
	// Tool is the tool the event is about, if any.
	Tool string `json:"tool,omitempty"`
	// SessionStarted is an agent session's start; Source says why
	// ("startup", "resume", "clear", "compact").
	SessionStarted bool   `json:"session_started,omitempty"`
	Source         string `json:"source,omitempty"`
	// TurnStarted and TurnEnded are the turn boundaries. Prompt is the
	// first line of the turn's prompt and Reply the first line of the
	// agent's last message, both cut to MaxLineText characters.
	TurnStarted bool   `json:"turn_started,omitempty"`
	TurnEnded   bool   `json:"turn_ended,omitempty"`
	Prompt      string `json:"prompt,omitempty"`
	Reply       string `json:"reply,omitempty"`
	// TurnID is the agent's id of the turn, when it gives one (Claude's
	// prompt_id, Codex's turn-id): a turn's end can come from a hook and
	// from the transcript, and the id tells they are one.
	TurnID string `json:"turn_id,omitempty"`
	// Compacting is the agent compacting its context.
	Compacting bool `json:"compacting,omitempty"`
	// SessionEnded is the agent ending; EndReason is its own word for why.
	SessionEnded bool   `json:"session_ended,omitempty"`
	EndReason    string `json:"end_reason,omitempty"`
	// Retry is a failed request to the model's API that the agent retries;
	// Answered is a response that came, which ends a spell of retries.
	Retry    *Retry `json:"retry,omitempty"`
	Answered bool   `json:"answered,omitempty"`
	// Limit is a usage limit the agent hit (a quota, a throttle it gave
	// up on, spent credit, a refused key).
	Limit *Limit `json:"limit,omitempty"`
	// At is when the event happened, when the source says (transcripts).
	At time.Time `json:"at,omitzero"`
	// Notices are what was amiss in a payload that was still usable.
	Notices []string `json:"notices,omitempty"`
}

// Retry is one failed request to the model's API, retried: its Attempt of
// at most Max (0: not said), why it failed, and when the next one goes.
type Retry struct {
	Attempt int       `json:"attempt"`
	Max     int       `json:"max,omitempty"`
	Reason  string    `json:"reason"`
	Next    time.Time `json:"next,omitzero"`
}

// Query asks Locate for a conversation.
type Query struct {
	// ConversationID, when set, is the conversation to find.
	ConversationID string
	// ProjectDir and Since narrow the search when the id is not known: the
	// conversation started in ProjectDir at or after Since.
	ProjectDir string
	Since      time.Time
	// Env is the agent's environment (K=V); nil means this process's.
	Env []string
	// Files reads the agent's home with the session user's rights; nil is
	// the daemon's own.
	Files FS
}

// Conversation is an agent's conversation on disk.
type Conversation struct {
	ID             string
	TranscriptPath string
}

// TranscriptOptions tune a Transcript.
type TranscriptOptions struct {
	// Interactive is Plan.Interactive, for the state after a turn's end.
	Interactive bool
	// EventsSince drops the events of lines stamped before it (a resumed
	// conversation's history); their usage is still counted.
	EventsSince time.Time
	// Files opens the transcript with the session user's rights; nil is
	// the daemon's own.
	Files FS
}
