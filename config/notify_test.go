package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func intp(n int) *int { return &n }

func TestNotifyRuleValid(t *testing.T) {
	rules := map[string]NotifyRule{
		"command":        {On: []string{"ended"}, Command: []string{"notify.sh", "--loud"}},
		"webhook":        {On: []string{"ended:error", "crashed"}, Webhook: "https://hooks.example.com/x", Template: "slack", Retries: intp(0)},
		"ntfy secret":    {Name: "phone", On: []string{"agent_waiting"}, Webhook: "https://ntfy.sh/topic", Template: "ntfy", SecretEnv: "NTFY_TOKEN"},
		"loopback http":  {On: []string{"failed"}, Webhook: "http://127.0.0.1:8080/hook", SecretFile: "/etc/sessiond/token", SecretHeader: "X-Token"},
		"localhost http": {On: []string{"warned"}, Webhook: "http://localhost/hook", SecretFile: "~/.config/sessiond/token"},
		"desktop":        {On: []string{"warned", "agent_waiting"}, Desktop: true, Project: "~/work/**", SessionName: "nightly-*"},
		"every reason":   {On: []string{"ended:complete", "ended:timeout", "ended:idle", "ended:interrupted", "ended:crashed", "ended:budget", "ended:waiting"}, Desktop: true},
		"every event":    {On: NotifyEvents, Desktop: true, MinInterval: Duration{60e9}, Timeout: Duration{5e9}},
		"basename glob":  {On: []string{"ended"}, Desktop: true, Project: "api-[0-9]*"},
	}
	for name, r := range rules {
		t.Run(name, func(t *testing.T) {
			if err := r.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestNotifyRuleInvalid(t *testing.T) {
	hook := "https://hooks.example.com/services/T0/B0/SECRETTOKEN"
	tests := []struct {
		name string
		rule NotifyRule
		key  string
		msg  string
	}{
		{"no on", NotifyRule{Desktop: true}, "on", "is required"},
		{"unknown event", NotifyRule{On: []string{"endd"}, Desktop: true}, "on", `unknown event "endd"`},
		{"unknown reason", NotifyRule{On: []string{"ended:oops"}, Desktop: true}, "on", `unknown end reason "oops"`},
		{"no sink", NotifyRule{On: []string{"ended"}}, "command", "no sink"},
		{"desktop false", NotifyRule{On: []string{"ended"}, Desktop: false}, "command", "no sink"},
		{"two sinks", NotifyRule{On: []string{"ended"}, Command: []string{"x"}, Webhook: hook}, "webhook", "exactly one sink, got command and webhook"},
		{"three sinks", NotifyRule{On: []string{"ended"}, Command: []string{"x"}, Webhook: hook, Desktop: true}, "webhook", "command and webhook and desktop"},
		{"empty command", NotifyRule{On: []string{"ended"}, Command: []string{}}, "command", "program name is empty"},
		{"empty argv0", NotifyRule{On: []string{"ended"}, Command: []string{"", "a"}}, "command", "program name is empty"},
		{"nul in argv", NotifyRule{On: []string{"ended"}, Command: []string{"x", "a\x00b"}}, "command", "NUL"},
		{"bad url", NotifyRule{On: []string{"ended"}, Webhook: "https://exa mple.com/%zz"}, "webhook", "not a valid URL"},
		{"ftp", NotifyRule{On: []string{"ended"}, Webhook: "ftp://example.com/x"}, "webhook", `scheme "ftp" is not http or https`},
		{"no scheme", NotifyRule{On: []string{"ended"}, Webhook: "example.com/hook"}, "webhook", "is not http or https"},
		{"no host", NotifyRule{On: []string{"ended"}, Webhook: "https:///path"}, "webhook", "no host"},
		{"userinfo", NotifyRule{On: []string{"ended"}, Webhook: "https://u:p@example.com/"}, "webhook", "credentials in the URL"},
		{"bad template", NotifyRule{On: []string{"ended"}, Webhook: hook, Template: "discord"}, "template", "not one of json, slack, ntfy"},
		{"template on command", NotifyRule{On: []string{"ended"}, Command: []string{"x"}, Template: "slack"}, "template", "only applies to a webhook"},
		{"secret on desktop", NotifyRule{On: []string{"ended"}, Desktop: true, SecretEnv: "X"}, "secret_env", "only applies to a webhook"},
		{"negative retries", NotifyRule{On: []string{"ended"}, Webhook: hook, Retries: intp(-1)}, "retries", "between 0 and 10"},
		{"too many retries", NotifyRule{On: []string{"ended"}, Webhook: hook, Retries: intp(11)}, "retries", "between 0 and 10"},
		{"negative timeout", NotifyRule{On: []string{"ended"}, Webhook: hook, Timeout: Duration{-1}}, "timeout", "must not be negative"},
		{"negative interval", NotifyRule{On: []string{"ended"}, Desktop: true, MinInterval: Duration{-1e9}}, "min_interval", "must not be negative"},
		{"both secrets", NotifyRule{On: []string{"ended"}, Webhook: hook, SecretFile: "/s", SecretEnv: "S"}, "secret_env", "not both"},
		{"header without secret", NotifyRule{On: []string{"ended"}, Webhook: hook, SecretHeader: "X-Key"}, "secret_header", "needs secret_file or secret_env"},
		{"bad header", NotifyRule{On: []string{"ended"}, Webhook: hook, SecretHeader: "X Key", SecretEnv: "S"}, "secret_header", "not a valid header name"},
		{"reserved header", NotifyRule{On: []string{"ended"}, Webhook: hook, SecretHeader: "Host", SecretEnv: "S"}, "secret_header", "set by sessiond"},
		{"relative secret file", NotifyRule{On: []string{"ended"}, Webhook: hook, SecretFile: "token"}, "secret_file", "absolute path"},
		{"bad env name", NotifyRule{On: []string{"ended"}, Webhook: hook, SecretEnv: "1X"}, "secret_env", "not an environment variable name"},
		{"secret over http", NotifyRule{On: []string{"ended"}, Webhook: "http://example.com/x", SecretEnv: "S"}, "webhook", "clear text"},
		{"bad project glob", NotifyRule{On: []string{"ended"}, Desktop: true, Project: "/src/[a"}, "project", "bad glob"},
		{"partial doublestar", NotifyRule{On: []string{"ended"}, Desktop: true, Project: "/src/a**"}, "project", "whole path element"},
		{"bad name glob", NotifyRule{On: []string{"ended"}, Desktop: true, SessionName: "x[", Name: "ok"}, "session_name", "bad glob"},
		{"bad rule name", NotifyRule{Name: "has space", On: []string{"ended"}, Desktop: true}, "name", "not a rule name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rule.Validate()
			var ne *NotifyError
			if !errors.As(err, &ne) {
				t.Fatalf("Validate = %v, want a *NotifyError", err)
			}
			if ne.Key != tt.key {
				t.Errorf("key = %q, want %q (%v)", ne.Key, tt.key, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
			if strings.Contains(err.Error(), "SECRETTOKEN") {
				t.Errorf("error %q shows the webhook's token", err)
			}
		})
	}
}

func TestNotifyBadURLNotShown(t *testing.T) {
	r := NotifyRule{On: []string{"ended"}, Webhook: "https://hooks.example.com/T0/SECRETTOKEN\x7f"}
	err := r.Validate()
	if err == nil || strings.Contains(err.Error(), "SECRETTOKEN") {
		t.Fatalf("Validate = %v, want an error that does not show the URL's path", err)
	}
}

func TestParseNotifyOn(t *testing.T) {
	tests := []struct{ in, event, reason string }{
		{"ended", "ended", ""},
		{"ended:error", "ended", "error"},
		{"crashed", "ended", "crashed"},
		{"agent_waiting", "agent_waiting", ""},
		{"budget", "budget", ""},
	}
	for _, tt := range tests {
		ev, reason, err := ParseNotifyOn(tt.in)
		if err != nil || ev != tt.event || reason != tt.reason {
			t.Errorf("ParseNotifyOn(%q) = %q, %q, %v; want %q, %q", tt.in, ev, reason, err, tt.event, tt.reason)
		}
	}
	if _, _, err := ParseNotifyOn("ended:"); err == nil {
		t.Error(`ParseNotifyOn("ended:") succeeded`)
	}
}

func TestValidateNotifyRules(t *testing.T) {
	rules := []NotifyRule{
		{Name: "a", On: []string{"ended"}, Desktop: true},
		{Name: "b", On: []string{"ended"}, Desktop: true},
		{Name: "a", On: []string{"warned"}, Desktop: true},
	}
	err := ValidateNotifyRules(rules)
	var ne *NotifyError
	if !errors.As(err, &ne) || ne.Key != "notify[2].name" || !strings.Contains(ne.Msg, "used twice (also notify[0])") {
		t.Fatalf("ValidateNotifyRules = %v, want notify[2].name used twice", err)
	}
	rules[2].Name = "c"
	rules[1].On = []string{"nope"}
	if err := ValidateNotifyRules(rules); !errors.As(err, &ne) || ne.Key != "notify[1].on" {
		t.Fatalf("ValidateNotifyRules = %v, want notify[1].on", err)
	}
	rules[1].On = []string{"ended"}
	if err := ValidateNotifyRules(rules); err != nil {
		t.Fatalf("ValidateNotifyRules = %v", err)
	}
}

// TestNotifyRuleTOML decodes the documented sample tables, so the tags and
// the Duration type work as docs/notifications.md shows them.
func TestNotifyRuleTOML(t *testing.T) {
	src := `
[[notify]]
name = "phone"
on = ["agent_waiting", "ended:error", "crashed"]
project = "~/work/**"
session_name = "nightly-*"
min_interval = "10m"
webhook = "https://ntfy.sh/my-sessions"
template = "ntfy"
timeout = "5s"
retries = 2
secret_header = "Authorization"
secret_file = "/etc/sessiond/ntfy-token"

[[notify]]
on = ["warned"]
command = ["notify.sh", "--urgent"]
timeout = "1m"
`
	var doc struct {
		Notify []NotifyRule `toml:"notify"`
	}
	md, err := toml.Decode(src, &doc)
	if err != nil {
		t.Fatal(err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		t.Fatalf("undecoded keys: %v", und)
	}
	if err := ValidateNotifyRules(doc.Notify); err != nil {
		t.Fatal(err)
	}
	r := doc.Notify[0]
	if r.MinInterval.Minutes() != 10 || r.Timeout.Seconds() != 5 || r.Retries == nil || *r.Retries != 2 || r.Sink() != SinkWebhook {
		t.Errorf("decoded %+v", r)
	}
	if got := doc.Notify[1].Sink(); got != SinkCommand {
		t.Errorf("sink = %q, want command", got)
	}
	b, err := json.Marshal(r.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "my-sessions") || !strings.Contains(string(b), `"webhook":"https://ntfy.sh/…"`) {
		t.Errorf("redacted JSON %s shows the topic", b)
	}
	if !strings.Contains(string(b), `"min_interval":"10m0s"`) {
		t.Errorf("JSON %s lacks min_interval", b)
	}
}

func TestRedactURL(t *testing.T) {
	tests := map[string]string{
		"https://hooks.slack.com/services/T/B/X": "https://hooks.slack.com/…",
		"http://127.0.0.1:8080":                  "http://127.0.0.1:8080",
		"https://example.com/?token=x":           "https://example.com/…",
		"":                                       "",
		"::bad":                                  "<invalid URL>",
	}
	for in, want := range tests {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzNotifyRuleValidate: no rule, however odd, panics validation, and an
// error always names a key of the rule.
func FuzzNotifyRuleValidate(f *testing.F) {
	f.Add(`{"on":["ended"],"desktop":true}`)
	f.Add(`{"on":["ended:error"],"webhook":"https://x/y","template":"ntfy","retries":3,"secret_env":"A"}`)
	f.Add(`{"on":["crashed"],"command":["a","b"],"project":"/a/**/b","session_name":"x*"}`)
	f.Add(`{"on":["warned"],"webhook":"http://[::1]:80/x","secret_file":"~/t"}`)
	keys := []string{"name", "on", "project", "session_name", "min_interval", "command", "webhook", "desktop",
		"timeout", "template", "retries", "secret_header", "secret_file", "secret_env"}
	f.Fuzz(func(t *testing.T, s string) {
		var r NotifyRule
		if json.Unmarshal([]byte(s), &r) != nil {
			return
		}
		err := r.Validate()
		if err == nil {
			if r.Sink() == "" {
				t.Fatalf("valid rule %s has no sink", s)
			}
			return
		}
		var ne *NotifyError
		if !errors.As(err, &ne) || !containsString(keys, ne.Key) {
			t.Fatalf("Validate(%s) = %v, want a key of the rule", s, err)
		}
	})
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
