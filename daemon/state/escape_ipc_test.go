package state_test

import (
	"testing"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// FuzzTerminalTextSameAsIPC keeps the daemon's terminal escaping and
// sessionctl's (ipc, which cannot import this package) the same.
func FuzzTerminalTextSameAsIPC(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J\n\tend\r", "\u009b\u202e\u2066", "\xff日本\x00\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, b := state.TerminalText(s), ipc.TerminalText(s); a != b {
			t.Errorf("TerminalText(%q): state %q, ipc %q", s, a, b)
		}
		if a, b := state.TerminalLine(s), ipc.TerminalLine(s); a != b {
			t.Errorf("TerminalLine(%q): state %q, ipc %q", s, a, b)
		}
	})
}
