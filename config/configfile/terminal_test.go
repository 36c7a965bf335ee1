package configfile

import (
	"errors"
	"strings"
	"testing"
)

func TestTerminalKeys(t *testing.T) {
	base := Default().Defaults
	if base.TTY != nil {
		t.Fatalf("default tty = %v, want unset", *base.TTY)
	}
	if base.DetachKey != "ctrl-]" {
		t.Fatalf("default detach_key = %q, want ctrl-]", base.DetachKey)
	}
	for _, tc := range []struct {
		src     string
		tty     *bool
		wanted  bool // TerminalWanted(true)
		keyByte byte
	}{
		{"[session]\ntty = true\n", ptr(true), true, 0x1d},
		{"[session]\ntty = false\ndetach_key = \"^A\"\n", ptr(false), false, 0x01},
		{"[session]\ndetach_key = \"ctrl-b\"\n", nil, true, 0x02},
	} {
		s, err := ParseProject("p.toml", []byte(tc.src), base)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if (s.TTY == nil) != (tc.tty == nil) || (s.TTY != nil && *s.TTY != *tc.tty) {
			t.Errorf("%q: tty = %v, want %v", tc.src, s.TTY, tc.tty)
		}
		if got := s.TerminalWanted(true); got != tc.wanted {
			t.Errorf("%q: TerminalWanted(true) = %v, want %v", tc.src, got, tc.wanted)
		}
		if got := s.TerminalWanted(false); got != (tc.tty != nil && *tc.tty) {
			t.Errorf("%q: TerminalWanted(false) = %v", tc.src, got)
		}
		if got := s.DetachKeyByte(); got != tc.keyByte {
			t.Errorf("%q: detach key %#x, want %#x", tc.src, got, tc.keyByte)
		}
	}
	// A clone does not share the tty setting.
	s, _ := ParseProject("p.toml", []byte("[session]\ntty = true\n"), base)
	c := s.Clone()
	*c.TTY = false
	if !*s.TTY {
		t.Error("changing a clone's tty changed the original")
	}
}

func TestTerminalKeyErrors(t *testing.T) {
	base := Default().Defaults
	for _, tc := range []struct {
		src  string
		line int
		msg  string
	}{
		{"[session]\ncommand = [\"x\"]\ndetach_key = \"ctrl-1\"\n", 3, "detach_key"},
		{"[session]\ndetach_key = \"q\"\n", 2, "ctrl-X"},
		{"[session]\ntty = \"yes\"\n", 2, "tty"},
	} {
		_, err := ParseProject("p.toml", []byte(tc.src), base)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("%q: err = %v, want *Error", tc.src, err)
		}
		if ce.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: %v; want line %d naming %q", tc.src, err, tc.line, tc.msg)
		}
	}
}

func ptr[T any](v T) *T { return &v }
