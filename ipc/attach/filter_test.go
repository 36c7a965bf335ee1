package attach

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func filtered(chunks ...string) string {
	var f outputFilter
	var out []byte
	for _, c := range chunks {
		out = f.filter(out, []byte(c))
	}
	return string(out)
}

func TestOutputFilter(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"text", "hello, wörld ✓\r\n", "hello, wörld ✓\r\n"},
		{"colours and movement", "\x1b[1;31mred\x1b[0m\x1b[10;5H\x1b[2J\x1b[K", "\x1b[1;31mred\x1b[0m\x1b[10;5H\x1b[2J\x1b[K"},
		{"modes", "\x1b[?1049h\x1b[?25l\x1b[?2004h\x1b[3;10r\x1b[4 q", "\x1b[?1049h\x1b[?25l\x1b[?2004h\x1b[3;10r\x1b[4 q"},
		{"charset and keypad", "\x1b(0qqq\x1b(B\x1b=\x1b>\x1b7\x1b8", "\x1b(0qqq\x1b(B\x1b=\x1b>\x1b7\x1b8"},
		{"clipboard written", "a\x1b]52;c;cm0gLXJmIH4=\x07b", "ab"},
		{"clipboard read", "a\x1b]52;c;?\x1b\\b", "ab"},
		{"title", "\x1b]0;PWNED\x07\x1b]2;x\x1b\\ok", "ok"},
		{"colour query", "\x1b]11;?\x07ok", "ok"},
		{"hyperlink kept", "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\"},
		{"DCS request", "a\x1bP$qm\x1b\\b", "ab"},
		{"tmux passthrough", "a\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\b", "ab"},
		{"APC, PM, SOS", "\x1b_Gf=100;AAAA\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\ok", "ok"},
		{"device status and attributes", "\x1b[6n\x1b[5n\x1b[c\x1b[>c\x1b[=cok", "ok"},
		{"window operations", "\x1b[8;100;200t\x1b[21t\x1b[14tok", "ok"},
		{"mode request", "\x1b[?2004$p\x1b[4$pok\x1b[!p", "ok\x1b[!p"},
		{"version and keyboard queries", "\x1b[>q\x1b[?u\x1b[uok", "\x1b[uok"},
		{"C1 as UTF-8", "a\xc2\x9b6nb\xc2\x9d52;c;x\x07c\xc2\xa0d", "a6nb52;c;x\x07c\xc2\xa0d"},
		{"cut CSI", "\x1b[12\n\x1b[1mok", "\x1b[1mok"},
		{"raw 8-bit C1", "a\x9b6nb\x9d52;c;UkFX\x07c", "a6nb52;c;UkFX\x07c"},
		{"UTF-8 kept whole", "é ✓ 𝄞 \xc3\xa9", "é ✓ 𝄞 é"},
		{"a C1 hidden in a hyperlink", "\x1b]8;;http://a\xc2\x9c\xc2\x9d52;c;T1NDOEMx\x07|", "|"},
		{"DECID", "a\x1bZb", "ab"},
		{"more queries", "\x1b[0x\x1b[1$u\x1b[1$w\x1b[1;1;1;1;1*y\x1b[?1;1S\x1b[?4m\x1b[1;1;2;2#|\x1b[5iok", "ok"},
		{"screen's title", "a\x1bkTITLE\x1b\\b", "ab"},
		{"a C1 in a CSI", "\x1b[1\x9b6mok", "6mok"},
		{"drawing kept", "\x1b[>4;1m\x1b[2 q\x1b[3`\x1b[?1049h\x1b[>1u\x1b[<u", "\x1b[>4;1m\x1b[2 q\x1b[3`\x1b[?1049h\x1b[>1u\x1b[<u"},
	} {
		if got := filtered(tc.in); got != tc.want {
			t.Errorf("%s: %q → %q, want %q", tc.name, tc.in, got, tc.want)
		}
		// Byte by byte: a sequence split anywhere comes out the same.
		var chunks []string
		for i := range len(tc.in) {
			chunks = append(chunks, tc.in[i:i+1])
		}
		if got := filtered(chunks...); got != tc.want {
			t.Errorf("%s, a byte at a time: %q → %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// FuzzOutputFilter: whatever a session prints, nothing that makes the
// terminal answer, or reaches past its screen, comes out, and splitting
// the output anywhere changes nothing.
func FuzzOutputFilter(f *testing.F) {
	for _, s := range []string{"\x1b]52;c;?\x07", "\x1b[6n", "\x1bP$qm\x1b\\", "\x1b]8;;u\x1b\\x", "\xc2\x9b6n", "\x1b[?1049h"} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint8) {
		var whole outputFilter
		out := whole.filter(nil, in)
		var split outputFilter
		c := int(cut) % (len(in) + 1)
		out2 := split.filter(split.filter(nil, in[:c]), in[c:])
		if !bytes.Equal(out, out2) {
			t.Fatalf("%q: whole %q, split at %d %q", in, out, c, out2)
		}
		for rest := out; len(rest) > 0; {
			r, size := utf8.DecodeRune(rest)
			if r >= 0x80 && r <= 0x9f || r == utf8.RuneError && size == 1 && rest[0] >= 0x80 && rest[0] <= 0x9f {
				t.Fatalf("%q came out as %q, which holds a C1 control", in, out)
			}
			rest = rest[size:]
		}
		for _, bad := range [][]byte{[]byte("\x1b]52"), []byte("\x1b]0;"), []byte("\x1bP"), []byte("\x1b_"), []byte("\x1b[6n"), []byte("\x1b[c"), []byte("\x1bZ"), []byte("\x1bk")} {
			if bytes.Contains(out, bad) {
				t.Fatalf("%q came out as %q, which holds %q", in, out, bad)
			}
		}
	})
}
