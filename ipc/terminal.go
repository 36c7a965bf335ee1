package ipc

import (
	"context"
	"io"
)

// The terminal API of tty sessions: GET /v1/sessions/{id}/screen,
// POST /v1/sessions/{id}/send and GET /v1/sessions/{id}/attach. An attach
// is an HTTP Upgrade (TermUpgrade) of its connection: after the 101
// answer, which carries the holder's TermStatus in TermStatusHeader as
// JSON, the connection carries the terminal stream as term.go frames it,
// spliced by the daemon to the session's holder.

// TermUpgrade is the protocol an attach request upgrades its connection
// to (the Upgrade header).
const TermUpgrade = "sessiond-term"

// TermStatusHeader carries the holder's TermStatus, as JSON, on the 101
// answer to an attach.
const TermStatusHeader = "Sessiond-Term-Status"

// ScreenOptions say what a screen request wants beside the screen.
type ScreenOptions struct {
	// Scrollback is how many lines of scrollback to send (0 for none).
	Scrollback int
}

// SendRequest types text into a tty session's terminal; Enter follows it
// with a carriage return (the Enter key).
type SendRequest struct {
	Text  string `json:"text"`
	Enter bool   `json:"enter,omitempty"`
}

// AttachOptions say how to attach to a tty session's terminal.
type AttachOptions struct {
	// ReadOnly attaches as a viewer that cannot type or resize; one viewer
	// at a time may be the writer.
	ReadOnly bool
}

// Terminals is the terminal API of tty sessions.
type Terminals interface {
	// SessionScreen returns what the session's terminal shows now, or
	// what it showed when the command ended.
	SessionScreen(ctx context.Context, c Caller, id string, opt ScreenOptions) (*TermScreen, error)
	// SendSession types text into the session's terminal.
	SendSession(ctx context.Context, c Caller, id string, req SendRequest) error
	// AttachSession connects a viewer to the session's terminal: the
	// stream carries terminal frames from the holder's first repaint on,
	// and the status is the holder's answer to the attach.
	AttachSession(ctx context.Context, c Caller, id string, opt AttachOptions) (io.ReadWriteCloser, *TermStatus, error)
}
