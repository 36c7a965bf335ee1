package notify

import (
	"path"
	"strings"
	"testing"

	"github.com/sessiond/sessiond/config"
)

func TestMatchProject(t *testing.T) {
	tests := []struct {
		pattern, dir, home string
		want               bool
	}{
		{"api", "/home/dev/src/api", "", true},
		{"api-*", "/home/dev/src/api-v2", "", true},
		{"api", "/home/dev/src/api/", "", true},
		{"api", "/home/dev/api/src", "", false},
		{"/home/dev/src/*", "/home/dev/src/api", "", true},
		{"/home/dev/src/*", "/home/dev/src/api/sub", "", false},
		{"/home/dev/**", "/home/dev/src/api/sub", "", true},
		{"/home/dev/**", "/home/dev", "", true},
		{"/home/**/api", "/home/dev/src/api", "", true},
		{"/home/**/api", "/home/api", "", true},
		{"/home/**/api", "/home/dev/src/web", "", false},
		{"/**/src/*", "/home/dev/src/api", "", true},
		{"/**/**/api", "/a/b/api", "", true},
		{"~/work/**", "/home/dev/work/x", "/home/dev", true},
		{"~/work/**", "/home/dev/work/x", "/home/dev/", true},
		{"~/work/**", "/home/other/work/x", "/home/dev", false},
		{"~/work/**", "/home/dev/work/x", "", false},
		{"/home/dev/src/[ab]pi", "/home/dev/src/api", "", true},
		{"/home/dev/src/[", "/home/dev/src/api", "", false},
		{"*", "", "", false},
	}
	for _, tt := range tests {
		if got := MatchProject(tt.pattern, tt.dir, tt.home); got != tt.want {
			t.Errorf("MatchProject(%q, %q, %q) = %v, want %v", tt.pattern, tt.dir, tt.home, got, tt.want)
		}
	}
}

func TestRuleMatches(t *testing.T) {
	tests := []struct {
		on     []string
		ev     Event
		want   bool
		reason string
	}{
		{[]string{"ended"}, Event{Type: "ended", EndReason: "complete"}, true, "ended matches every end"},
		{[]string{"ended:error"}, Event{Type: "ended", EndReason: "error"}, true, ""},
		{[]string{"ended:error"}, Event{Type: "ended", EndReason: "timeout"}, false, ""},
		{[]string{"crashed"}, Event{Type: "ended", EndReason: "crashed"}, true, "crashed is ended:crashed"},
		{[]string{"crashed"}, Event{Type: "ended", EndReason: "error"}, false, ""},
		{[]string{"warned", "agent_waiting"}, Event{Type: "agent_waiting"}, true, ""},
		{[]string{"warned"}, Event{Type: "agent_waiting"}, false, ""},
		{[]string{"ended:budget", "budget"}, Event{Type: "budget"}, true, ""},
		{[]string{"failed"}, Event{Type: "restart_limit"}, false, ""},
		{[]string{"ended"}, Event{Type: "test"}, false, "test is sent by Test, not matched"},
	}
	for _, tt := range tests {
		c, err := compile(config.NotifyRule{On: tt.on, Desktop: true}, FromDaemon, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := c.matches(&tt.ev, ""); got != tt.want {
			t.Errorf("on %v, event %s/%s: matches = %v, want %v %s", tt.on, tt.ev.Type, tt.ev.EndReason, got, tt.want, tt.reason)
		}
	}
}

func TestCompileKeys(t *testing.T) {
	r := config.NotifyRule{On: []string{"ended"}, Desktop: true}
	a, _ := compile(r, FromDaemon, "")
	b, _ := compile(r, FromProject, "/p")
	c, _ := compile(r, FromProject, "/q")
	r.MinInterval.Duration = 1
	d, _ := compile(r, FromProject, "/q")
	keys := map[string]bool{a.key: true, b.key: true, c.key: true, d.key: true}
	if len(keys) != 4 {
		t.Errorf("rules of different origin, project or content share a key")
	}
}

// FuzzMatchProject: a project glob never panics, and for patterns that the
// config accepts, without "**", "~" or classes, it agrees with path.Match
// on the whole path.
func FuzzMatchProject(f *testing.F) {
	f.Add("/home/*/src/**", "/home/dev/src/api")
	f.Add("api-*", "/srv/api-2")
	f.Add("~/work/**/x", "/root/work/a/b/x")
	f.Add("/a/**/**/b/**", "/a/b")
	f.Add("/[a-", "/a")
	f.Fuzz(func(t *testing.T, pattern, dir string) {
		if len(pattern) > 128 || len(dir) > 512 {
			return
		}
		got := MatchProject(pattern, dir, "/root")
		r := config.NotifyRule{On: []string{"ended"}, Desktop: true, Project: pattern}
		if r.Validate() != nil || !strings.HasPrefix(pattern, "/") || strings.ContainsAny(pattern, "[\\~") ||
			strings.Contains(pattern, "**") || strings.HasSuffix(pattern, "/") || strings.HasSuffix(dir, "/") || dir == "" {
			return
		}
		want, err := path.Match(pattern, dir)
		if err == nil && got != want {
			t.Fatalf("MatchProject(%q, %q) = %v, path.Match says %v", pattern, dir, got, want)
		}
	})
}
