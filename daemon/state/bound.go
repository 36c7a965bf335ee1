package state

import (
	"strings"
	"unicode/utf8"
)

// truncate cuts s to at most max runes, ending in "…" when it cut, and
// replaces invalid UTF-8 so that what is stored reads back identically.
func truncate(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// bound escapes s for storing (see storeEscape) and truncates it to max
// runes: what every Bound method does to the text it keeps.
func bound(s string, max int) string { return truncate(storeEscape(s), max) }

// oneLine folds line breaks and tabs into spaces, for text shown as one line
// of a list.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// boundList escapes and truncates each item (see bound), drops empty ones and keeps at most max.
func boundList(items []string, max, maxLen int) []string {
	out := make([]string, 0, min(len(items), max))
	for _, it := range items {
		if len(out) == max {
			break
		}
		it = bound(strings.TrimSpace(it), maxLen)
		if it != "" {
			out = append(out, it)
		}
	}
	return out
}
