package ipc

import (
	"testing"
)

func TestTerminalText(t *testing.T) {
	tests := []struct {
		name, in, text, line string
	}{
		{"plain", "fix the cart", "fix the cart", "fix the cart"},
		{"unicode", "café ✓ 日本", "café ✓ 日本", "café ✓ 日本"},
		{"newline and tab", "a\n\tb", "a\n\tb", `a\n\tb`},
		{"carriage return", "ok\rFAILED", `ok\rFAILED`, `ok\rFAILED`},
		{"colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"title (OSC)", "\x1b]0;owned\x07", `\x1b]0;owned\x07`, `\x1b]0;owned\x07`},
		{"NUL and DEL", "a\x00b\x7f", `a\x00b\x7f`, `a\x00b\x7f`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`, `a\u009b2Jb`},
		{"bidi override", "abc\u202edcba", `abc\u202edcba`, `abc\u202edcba`},
		{"invalid UTF-8", "a\xffb", `a\xffb`, `a\xffb`},
		{"backslash kept", `C:\x1b`, `C:\x1b`, `C:\x1b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TerminalText(tt.in); got != tt.text {
				t.Errorf("TerminalText(%q): got %q, want %q", tt.in, got, tt.text)
			}
			if got := TerminalLine(tt.in); got != tt.line {
				t.Errorf("TerminalLine(%q): got %q, want %q", tt.in, got, tt.line)
			}
		})
	}
}
