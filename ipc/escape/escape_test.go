package escape

import (
	"testing"
	"unicode/utf8"
)

func escapeWith(s string, keepLines bool) string {
	if keepLines {
		return Terminal(s)
	}
	return Line(s)
}

func FuzzTerminalText(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "a\nb\tc\r", "\u009b\u202e", "\xff\xfe", "日本\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, keep := range []bool{true, false} {
			out := escapeWith(s, keep)
			if !utf8.ValidString(out) {
				t.Fatalf("%q: output %q is not UTF-8", s, out)
			}
			for _, r := range out {
				if r < 0x20 && !(keep && (r == '\n' || r == '\t')) || r == 0x7f || escapedRune(r) {
					t.Fatalf("%q: output %q still holds %U", s, out, r)
				}
			}
			if again := escapeWith(out, keep); again != out {
				t.Fatalf("%q: not stable: %q then %q", s, out, again)
			}
		}
	})
}
