package state

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// StoreText returns s made safe to store, or an error naming field if s
// holds a NUL byte (which no file or terminal shows and C strings cut at).
// Otherwise CR LF becomes LF, invalid UTF-8 becomes U+FFFD, and every other
// control character but newline and tab (C0, DEL and C1, which includes ESC
// and so every terminal escape sequence) is written out visibly as \xNN or
// \u00NN: what is stored can be printed, and reads back unchanged.
func StoreText(field, s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("%s: contains a NUL byte", field)
	}
	return storeEscape(s), nil
}

// EscapeText is StoreText for text that may hold anything (an agent's
// prompt, a notice): a NUL is escaped like every other control character.
func EscapeText(s string) string { return storeEscape(s) }

// storeEscape is StoreText without the NUL check: a NUL is escaped too. The
// Bound methods use it, so that what sessiond writes is always escaped.
// It is idempotent: its output has no control character left to escape.
func storeEscape(s string) string {
	if !needsEscape(s, true) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return escapeControls(s, true, false)
}

// TerminalText returns s safe to print on a terminal: control characters
// other than newline and tab (C0, DEL, C1, and so ESC and every escape
// sequence), the bidirectional overrides and isolates that reorder what is
// shown (U+202A–U+202E, U+2066–U+2069), and bytes that are not UTF-8 are
// written out as \xNN or \uNNNN. Plain text comes back unchanged.
func TerminalText(s string) string {
	if !needsEscape(s, true) {
		return s
	}
	return escapeControls(s, true, true)
}

// TerminalLine is TerminalText for text shown on one line, such as a table
// cell: newline and tab are escaped too, as \n and \t.
func TerminalLine(s string) string {
	if !needsEscape(s, false) {
		return s
	}
	return escapeControls(s, false, true)
}

// needsEscape reports quickly whether s has anything escapeControls changes.
func needsEscape(s string, keepLines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n' || c == '\t':
			if !keepLines {
				return true
			}
		case c < 0x20 || c == 0x7f || c >= 0x80:
			if c < 0x80 || !plainUTF8(s[i:]) {
				return true
			}
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n - 1
		}
	}
	return false
}

// plainUTF8 reports whether s starts with a valid rune that is printed as is.
func plainUTF8(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return !(r == utf8.RuneError && n == 1) && !escapedRune(r)
}

// escapedRune reports whether r (not ASCII) is written out: C1 controls and
// the bidirectional controls.
func escapedRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

func escapeControls(s string, keepLines, bidi bool) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			switch {
			case c == '\n' && keepLines, c == '\t' && keepLines:
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
		case r >= 0x80 && r <= 0x9f, bidi && escapedRune(r):
			writeHex(&b, `\u`, uint32(r), 4)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// termLine folds s onto one line (line breaks and tabs become spaces) and
// escapes what is left for a terminal: for one-line fields shown to people.
func termLine(s string) string { return TerminalLine(oneLine(s)) }

// inline makes user text one line of markdown: line breaks fold into
// spaces (so no field can start a line of its own: a heading, a rule, an
// entry), control characters are escaped (so nothing reaches a terminal
// raw), and a leading "#", ">", "`" or "~" is backslash-escaped, so that a
// field after a list bullet cannot open a heading or a code fence inside
// the item either.
func inline(s string) string {
	s = termLine(s)
	if s != "" && strings.IndexByte("#>`~", s[0]) >= 0 {
		s = `\` + s
	}
	return s
}

// codeSpan writes s as a markdown code span whose backtick fence is longer
// than any run of backticks in s, so that s cannot end it early.
func codeSpan(s string) string {
	s = termLine(s)
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// writeHex writes prefix, then v as that many lower-case hex digits.
func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for i := digits - 1; i >= 0; i-- {
		b.WriteByte(hex[v>>(4*i)&0xf])
	}
}
