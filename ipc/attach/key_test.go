package attach

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseDetachKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want byte
		err  bool
	}{
		{"ctrl-]", 0x1d, false},
		{"Ctrl-A", 0x01, false},
		{"ctrl-z", 0x1a, false},
		{"^]", 0x1d, false},
		{"^\\", 0x1c, false},
		{"ctrl-@", 0x00, false},
		{"ctrl-_", 0x1f, false},
		{"ctrl-", 0, true},
		{"ctrl-ab", 0, true},
		{"ctrl-1", 0, true},
		{"]", 0, true},
		{"", 0, true},
	} {
		got, err := ParseDetachKey(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseDetachKey(%q) = %#x, %v; want %#x, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	if got := KeyName(0x1d); got != "ctrl-]" {
		t.Errorf("KeyName(0x1d) = %q", got)
	}
	if got := KeyName(0x01); got != "ctrl-a" {
		t.Errorf("KeyName(0x01) = %q", got)
	}
}

func TestAltTracker(t *testing.T) {
	var a altTracker
	for _, tc := range []struct {
		chunk string
		want  bool
	}{
		{"plain", false},
		{"\x1b[?1049h", true},
		{"text", true},
		{"\x1b[?10", true},
		{"49l", false}, // cut across two chunks
		{"\x1b[?47h and \x1b[?47l", false},
		{"\x1b[?1047l then \x1b[?1049h", true},
	} {
		a.scan([]byte(tc.chunk))
		if a.on != tc.want {
			t.Fatalf("after %q: on=%v, want %v", tc.chunk, a.on, tc.want)
		}
	}
}
