// Package escape is the one escaper of text from users (report fields,
// names, file names, log lines, an agent's words): Store for what is
// written to a file, Terminal and Line for what is printed on a terminal.
// The daemon stores text escaped and sessionctl prints it escaped again,
// both through this package, so that no control sequence of a user's
// reaches another user's terminal raw. It imports only the standard
// library.
package escape

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// Store returns s made safe to store: CR LF becomes LF, invalid UTF-8
// becomes U+FFFD, and every control character but newline and tab (C0,
// DEL and C1, which includes ESC and so every terminal escape sequence, and
// NUL) is written out visibly as \xNN or \u00NN: what is stored can be
// printed, and reads back unchanged. It is idempotent: its output has no
// control character left to escape.
func Store(s string) string {
	if !needsEscape(s, true) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return escapeControls(s, true, false)
}

// Terminal returns s safe to print on a terminal: control characters
// other than newline and tab (C0, DEL, C1, and so ESC and every escape
// sequence), the bidirectional overrides and isolates that reorder what is
// shown (U+202A–U+202E, U+2066–U+2069), and bytes that are not UTF-8 are
// written out as \xNN or \uNNNN. Plain text comes back unchanged.
func Terminal(s string) string {
	if !needsEscape(s, true) {
		return s
	}
	return escapeControls(s, true, true)
}

// Line is Terminal for text shown on one line, such as a table
// cell: newline and tab are escaped too, as \n and \t.
func Line(s string) string {
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

// writeHex writes prefix, then v as that many lower-case hex digits.
func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for i := digits - 1; i >= 0; i-- {
		b.WriteByte(hex[v>>(4*i)&0xf])
	}
}

// Writer escapes text for a terminal as it is written through it, as
// Terminal does: newlines and tabs pass, every other control character
// and every byte that is not UTF-8 is written out visibly. A character cut
// in two by a write is completed by the next.
type Writer struct {
	w       io.Writer
	partial []byte // the start of a UTF-8 sequence the next write completes
}

// NewWriter returns a Writer escaping to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it. It reports len(p) unless the underlying
// writer fails.
func (e *Writer) Write(p []byte) (int, error) {
	n := len(p)
	if len(e.partial) > 0 {
		p = append(e.partial, p...)
		e.partial = nil
	}
	// Hold back a UTF-8 sequence the write cut short.
	if cut := incompleteTail(p); cut > 0 {
		e.partial = append([]byte(nil), p[len(p)-cut:]...)
		p = p[:len(p)-cut]
	}
	if len(p) > 0 {
		if _, err := io.WriteString(e.w, Terminal(string(p))); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Flush writes what a last, incomplete character left, escaped.
func (e *Writer) Flush() error {
	if len(e.partial) == 0 {
		return nil
	}
	_, err := io.WriteString(e.w, Terminal(string(e.partial)))
	e.partial = nil
	return err
}

// incompleteTail is how many bytes at the end of p begin a UTF-8 sequence
// that is not complete yet (0 when none).
func incompleteTail(p []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(p); i++ {
		c := p[len(p)-i]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(p[len(p)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

// JSONC1 writes the C1 controls (U+0080 to U+009F) in JSON text as \u
// escapes: JSON leaves them raw, and some terminals obey them as ESC
// sequences (U+009D as OSC, U+009B as CSI). The value is the same JSON;
// b itself is returned when it holds none.
func JSONC1(b []byte) []byte {
	i := bytes.IndexByte(b, 0xc2)
	for i >= 0 && (i+1 >= len(b) || b[i+1] < 0x80 || b[i+1] > 0x9f) {
		j := bytes.IndexByte(b[i+1:], 0xc2)
		if j < 0 {
			return b
		}
		i += 1 + j
	}
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for k := 0; k < len(b); k++ {
		if b[k] == 0xc2 && k+1 < len(b) && b[k+1] >= 0x80 && b[k+1] <= 0x9f {
			out = append(out, `\u00`...)
			out = append(out, "0123456789abcdef"[b[k+1]>>4], "0123456789abcdef"[b[k+1]&15])
			k++
			continue
		}
		out = append(out, b[k])
	}
	return out
}
