// Package ui is sessionctl's live terminal dashboard (sessionctl ui): a
// Bubble Tea program that lists every session the daemon shows the user,
// with a detail pane, the session's output as it is written, and the
// actions of sessionctl on the selected session.
//
// The dashboard is fed by the daemon's event stream: each event of a
// session fetches that session's record again, so nothing polls; a tick
// once a second only moves the clocks. When the daemon goes away the
// dashboard says so and reconnects when it answers again.
//
// The package lives apart from sessionctl's other commands and does no
// work at package initialisation, nor links a package that does, so that
// the other commands start as fast as without it: it styles with x/ansi
// rather than lipgloss (whose init detects the terminal's colours, reading
// terminfo and, inside tmux, running `tmux info`), and edits its few lines
// of text itself rather than with the bubbles text input (whose clipboard
// dependency searches $PATH in its init).
package ui
