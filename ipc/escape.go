package ipc

import "github.com/sessiond/sessiond/ipc/escape"

// TerminalText returns s safe to print on a terminal: control characters
// other than newline and tab (C0, DEL, C1, and so ESC and every escape
// sequence), the bidirectional overrides and isolates that reorder what is
// shown (U+202A–U+202E, U+2066–U+2069), and bytes that are not UTF-8 are
// written out as \xNN or \uNNNN. Plain text comes back unchanged. sessionctl
// passes every text from the daemon through it (or TerminalLine) before it
// prints: names, report fields and file names come from users, and root
// sees everyone's.
func TerminalText(s string) string { return escape.Terminal(s) }

// TerminalLine is TerminalText for text shown on one line, such as a table
// cell: newline and tab are escaped too, as \n and \t.
func TerminalLine(s string) string { return escape.Line(s) }
