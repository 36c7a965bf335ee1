package attach

import (
	"fmt"
	"strings"
)

// DefaultDetachKey is ctrl-], as telnet has it.
const DefaultDetachKey byte = 0x1d

// ParseDetachKey reads a detach key written as "ctrl-X" or "^X", where X is
// a letter or one of @ [ \ ] ^ _ (case does not matter).
func ParseDetachKey(s string) (byte, error) {
	rest, ok := strings.CutPrefix(strings.ToLower(s), "ctrl-")
	if !ok {
		rest, ok = strings.CutPrefix(s, "^")
	}
	if !ok || len(rest) != 1 {
		return 0, fmt.Errorf("detach key %q: write it as ctrl-X or ^X, X a letter or one of @[\\]^_", s)
	}
	c := rest[0]
	switch {
	case c >= 'a' && c <= 'z':
		return c - 'a' + 1, nil
	case c >= 'A' && c <= 'Z':
		return c - 'A' + 1, nil
	case c >= '@' && c <= '_':
		return c - '@', nil
	}
	return 0, fmt.Errorf("detach key %q: %q has no control key; use a letter or one of @[\\]^_", s, c)
}

// KeyName writes a control key as ctrl-X.
func KeyName(k byte) string {
	if k < 0x20 {
		c := k + '@'
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		return "ctrl-" + string(rune(c))
	}
	return fmt.Sprintf("%q", k)
}
