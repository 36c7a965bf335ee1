package config

import (
	"fmt"
	"strings"
)

// DefaultDetachKey is the key that ends sessionctl attach when detach_key
// is not set: ctrl-], as telnet has it.
const DefaultDetachKey = "ctrl-]"

// TerminalWanted reports whether the session's command runs on a terminal:
// the tty key when it is set, else interactiveAgent (the command is an
// agent that a person talks to at a terminal, such as claude without -p).
func (s *Spec) TerminalWanted(interactiveAgent bool) bool {
	if s.TTY != nil {
		return *s.TTY
	}
	return interactiveAgent
}

// OnTerminal reports whether the spec, as resolved at a start, runs on a
// terminal.
func (s *Spec) OnTerminal() bool { return s.TTY != nil && *s.TTY }

// DetachKeyByte returns the spec's detach key as the byte a terminal sends
// for it.
func (s *Spec) DetachKeyByte() byte {
	k, err := ParseDetachKey(s.DetachKey)
	if err != nil {
		k, _ = ParseDetachKey(DefaultDetachKey)
	}
	return k
}

func (s *Spec) validateTerminal() error {
	if _, err := ParseDetachKey(s.DetachKey); err != nil {
		return &FieldError{"detach_key", err.Error()}
	}
	return nil
}

// ParseDetachKey reads a detach key written as "ctrl-X" or "^X", where X is
// a letter or one of @ [ \ ] ^ _ (case does not matter); "" is
// DefaultDetachKey.
func ParseDetachKey(s string) (byte, error) {
	if s == "" {
		s = DefaultDetachKey
	}
	rest, ok := strings.CutPrefix(strings.ToLower(s), "ctrl-")
	if !ok {
		rest, ok = strings.CutPrefix(s, "^")
	}
	if !ok || len(rest) != 1 {
		return 0, fmt.Errorf("%q: write it as ctrl-X or ^X, X a letter or one of @[\\]^_", s)
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
	return 0, fmt.Errorf("%q: %q has no control key; use a letter or one of @[\\]^_", s, c)
}
