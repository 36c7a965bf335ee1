package ipc

import (
	"fmt"
	"strings"
)

// MaxNameLen bounds a session's name.
const MaxNameLen = 64

// CheckName reports a session name that cannot be a handle: names are
// letters, digits, '.', '_' and '-', start with a letter or digit, and
// are at most MaxNameLen long.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("name: empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("name %q: longer than %d characters", name, MaxNameLen)
	}
	for i, c := range name {
		if !nameChar(c) || (i == 0 && (c == '.' || c == '-' || c == '_')) {
			return fmt.Errorf("name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	return nil
}

// NameFrom makes a valid name out of text such as a directory's base
// name, replacing what a name may not hold.
func NameFrom(s string) string {
	var b strings.Builder
	for _, c := range s {
		if b.Len() >= MaxNameLen {
			break
		}
		if nameChar(c) {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), ".-_")
	if name == "" {
		return "session"
	}
	return name
}

func nameChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}
