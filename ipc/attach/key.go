package attach

import (
	"fmt"

	"github.com/sessiond/sessiond/config"
)

// DefaultDetachKey is ctrl-], as telnet has it.
const DefaultDetachKey byte = 0x1d

// ParseDetachKey reads a detach key written as "ctrl-X" or "^X", where X is
// a letter or one of @ [ \ ] ^ _ (case does not matter), as the spec's
// detach_key is written.
func ParseDetachKey(s string) (byte, error) {
	if s == "" {
		return 0, fmt.Errorf("detach key is empty: write it as ctrl-X or ^X, X a letter or one of @[\\]^_")
	}
	k, err := config.ParseDetachKey(s)
	if err != nil {
		return 0, fmt.Errorf("detach key %w", err)
	}
	return k, nil
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
