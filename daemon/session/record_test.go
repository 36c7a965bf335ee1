package session

import "testing"

// TestCommandSummary: the started event names the executable and counts
// its arguments; an agent's prompt never reaches a notification sink.
func TestCommandSummary(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{nil, "nothing"},
		{[]string{"/usr/bin/sleep"}, "sleep"},
		{[]string{"claude", "-p"}, "claude (1 argument)"},
		{[]string{"claude", "-p", "fix the login bug, the password is hunter2"}, "claude (2 arguments)"},
	} {
		if got := commandSummary(tc.argv); got != tc.want {
			t.Errorf("commandSummary(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}
