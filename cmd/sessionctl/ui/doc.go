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
// work at package initialisation, so that linking it costs those commands
// nothing measurable at start-up; it leaves out the bubbles text input,
// whose clipboard dependency searches $PATH in its init.
package ui
