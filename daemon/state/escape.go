package state

import (
	"fmt"
	"strings"

	"github.com/sessiond/sessiond/ipc/escape"
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
// bounding functions use it, so that what sessiond writes is always escaped.
func storeEscape(s string) string { return escape.Store(s) }

// TerminalText returns s safe to print on a terminal (escape.Terminal).
func TerminalText(s string) string { return escape.Terminal(s) }

// TerminalLine is TerminalText for text shown on one line (escape.Line).
func TerminalLine(s string) string { return escape.Line(s) }

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
