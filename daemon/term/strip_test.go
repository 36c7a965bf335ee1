package term

import (
	"bytes"
	"strings"
	"testing"
)

func TestStripString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain\n", "plain\n"},
		{"crlf\r\nline\r\n", "crlf\nline\n"},
		{"\x1b[1;31mred\x1b[0m text\n", "red text\n"},
		{"10%\r20%\r30%\n", "10%\n20%\n30%\n"},
		{"\x1b]0;title\x07after\n", "after\n"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n", "link\n"},
		{"\x1bP+q544e\x1b\\dcs gone\n", "dcs gone\n"},
		{"a\x1b[2Cb\n", "a  b\n"},
		{"a\x1b[Cb\n", "a b\n"},
		// Claude Code's welcome: words placed by column (CSI n G).
		{"\x1b[31mWelcome\x1b[9Gto\x1b[12GClaude\x1b[19GCode\x1b[24G\x1b[2mv2.1.328\r\r\n", "Welcome to Claude Code v2.1.328\n"},
		{"\x1b[2GUnable\x1b[9Gto\n", " Unable to\n"},
		{"\x1b[2G\x1b[95mAbc\x1b[39m\r\r\n\x1b[2GNext\n", " Abc\n Next\n"},
		{"é\x1b[3Gx\n", "é x\n"},
		{"long line\x1b[3Gover\n", "long line over\n"},
		{"10%\x1b[G20%\x1b[1G30%\n", "10%\n20%\n30%\n"},
		{"\x1b[99999Cfar\n", strings.Repeat(" ", 512) + "far\n"},
		{"top\x1b[5;1Hbottom", "top\nbottom"},
		{"\x1b[?1049h\x1b[H\x1b[2Jfull\x1b[?1049l", "full"},
		{"bell\x07 back\x08space\n", "bell backspace\n"},
		{"\x1b(Bcharset\x1b7saved\x1b8\n", "charsetsaved\n"},
		{"utf-8 ✓ é\n", "utf-8 ✓ é\n"},
		{"tab\there\n", "tab\there\n"},
		{"\x1b[31", ""},           // cut: nothing yet
		{"\x1b]0;never ends", ""}, // an unterminated title is not text
		{"trailing return\r", "trailing return\n"},
	} {
		if got := StripString(tc.in); got != tc.want {
			t.Errorf("StripString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A sequence cut by a write is completed by the next one.
func TestStripperSplitWrites(t *testing.T) {
	in := "\x1b[1;32mgreen\x1b[0m\r\n\x1b]2;t\x07\x1b[3;1Hnext\r\nlast"
	want := StripString(in)
	for cut := 0; cut <= len(in); cut++ {
		var b bytes.Buffer
		s := NewStripper(&b)
		_, _ = s.Write([]byte(in[:cut]))
		_, _ = s.Write([]byte(in[cut:]))
		_ = s.Flush()
		if b.String() != want {
			t.Fatalf("cut at %d: %q, want %q", cut, b.String(), want)
		}
	}
}

func FuzzStripper(f *testing.F) {
	f.Add([]byte("\x1b[1mbold\x1b[0m\r\n"), 3)
	f.Add([]byte("\x1b]0;t\x1b\\x\x1bP1\x1b\\"), 1)
	f.Add([]byte("a\rb\r\r\nc\x1b[2C\x1b[H"), 5)
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		whole := StripString(string(in))
		if strings.ContainsRune(whole, 0x1b) {
			t.Fatalf("ESC left in %q", whole)
		}
		if strings.ContainsRune(whole, '\r') {
			t.Fatalf("carriage return left in %q", whole)
		}
		if cut < 0 {
			cut = -cut
		}
		cut %= len(in) + 1
		var b bytes.Buffer
		s := NewStripper(&b)
		_, _ = s.Write(in[:cut])
		_, _ = s.Write(in[cut:])
		_ = s.Flush()
		if b.String() != whole {
			t.Fatalf("split at %d gives %q, whole gives %q", cut, b.String(), whole)
		}
	})
}
