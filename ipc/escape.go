package ipc

import (
	"strings"
	"unicode/utf8"
)

// TerminalText returns s safe to print on a terminal: control characters
// other than newline and tab (C0, DEL, C1, and so ESC and every escape
// sequence), the bidirectional overrides and isolates that reorder what is
// shown (U+202A–U+202E, U+2066–U+2069), and bytes that are not UTF-8 are
// written out as \xNN or \uNNNN. Plain text comes back unchanged. sessionctl
// passes every text from the daemon through it (or TerminalLine) before it
// prints: names, report fields and file names come from users, and root
// sees everyone's.
func TerminalText(s string) string { return escapeTerminal(s, true) }

// TerminalLine is TerminalText for text shown on one line, such as a table
// cell: newline and tab are escaped too, as \n and \t.
func TerminalLine(s string) string { return escapeTerminal(s, false) }

func escapeTerminal(s string, keepLines bool) string {
	if !needsTerminalEscape(s, keepLines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case (c == '\n' || c == '\t') && keepLines:
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\r':
				b.WriteString(`\r`)
			case c < 0x20 || c == 0x7f:
				writeHex(&b, `\x`, uint32(c), 2)
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeHex(&b, `\x`, uint32(c), 2)
		case escapedTerminalRune(r):
			writeHex(&b, `\u`, uint32(r), 4)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// needsTerminalEscape reports quickly whether escapeTerminal changes s.
func needsTerminalEscape(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && !(keepLines && (c == '\n' || c == '\t')) || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || escapedTerminalRune(r) {
			return true
		}
		i += n
	}
	return false
}

// escapedTerminalRune reports whether r (not ASCII) is written out: C1
// controls and the bidirectional controls.
func escapedTerminalRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// writeHex writes prefix, then v as that many lower-case hex digits.
func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for i := digits - 1; i >= 0; i-- {
		b.WriteByte(hex[v>>(4*i)&0xf])
	}
}
