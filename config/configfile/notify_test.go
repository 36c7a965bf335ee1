package configfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessiond/sessiond/config"
)

func TestNotifyRulesInBothFiles(t *testing.T) {
	daemon := "log_level = \"info\"\n\n[[notify]]\nname = \"phone\"\non = [\"agent_waiting\", \"ended:error\"]\nwebhook = \"https://ntfy.example.com/t\"\ntemplate = \"ntfy\"\n\n[[notify]]\non = [\"ended\"]\ndesktop = true\n"
	c, err := Parse("d.toml", []byte(daemon))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(c.Notify) != 2 || c.Notify[0].Name != "phone" || c.Notify[0].Template != "ntfy" || !c.Notify[1].Desktop {
		t.Errorf("daemon rules = %+v", c.Notify)
	}
	project := "[session]\ncommand = [\"agent\"]\n\n[[notify]]\non = [\"warned\"]\ncommand = [\"./warn.sh\"]\ntimeout = \"1m\"\n"
	if _, err := ParseProject("p.toml", []byte(project), Default().Defaults); err != nil {
		t.Fatalf("ParseProject with a rule: %v", err)
	}
	rules, err := ParseProjectNotify("p.toml", []byte(project))
	if err != nil {
		t.Fatalf("ParseProjectNotify: %v", err)
	}
	if len(rules) != 1 || rules[0].Command[0] != "./warn.sh" || rules[0].Timeout.Duration.Minutes() != 1 {
		t.Errorf("project rules = %+v", rules)
	}
	if rules, err := ParseProjectNotify("p.toml", []byte("[session]\ncommand = [\"a\"]\n")); err != nil || len(rules) != 0 {
		t.Errorf("a file without rules: %v, %v", rules, err)
	}
}

func TestNotifyRuleErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		key, msg  string
	}{
		{"unknown event", "[[notify]]\non = [\"ended\", \"boom\"]\ncommand = [\"x\"]\n", 2, "notify[0].on", `unknown event "boom"`},
		{"second rule", "[[notify]]\non = [\"ended\"]\ncommand = [\"x\"]\n\n[[notify]]\non = [\"ended\"]\nwebhook = \"mailto:x\"\n", 7, "notify[1].webhook", "not http or https"},
		{"no sink at the header", "# rules\n\n[[notify]]\nname = \"a\"\non = [\"ended\"]\n", 3, "notify[0].command", "no sink"},
		{"duplicate name", "[[notify]]\nname = \"a\"\non = [\"ended\"]\ndesktop = true\n[[notify]]\nname = \"a\"\non = [\"failed\"]\ndesktop = true\n", 6, "notify[1].name", "used twice"},
		{"webhook key on a command", "[[notify]]\non = [\"ended\"]\ncommand = [\"x\"]\nretries = 2\n", 4, "notify[0].retries", "only applies to a webhook"},
		{"unknown key", "[[notify]]\non = [\"ended\"]\ncommand = [\"x\"]\nurl = \"y\"\n", 4, "notify.url", "unknown key"},
		{"secret in clear", "[[notify]]\non = [\"ended\"]\nwebhook = \"http://example.com/x\"\nsecret_env = \"TOKEN\"\n", 3, "notify[0].webhook", "clear text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, parse := range []struct {
				what string
				run  func() error
			}{
				{"daemon", func() error { _, err := Parse("f.toml", []byte(tt.src)); return err }},
				{"project", func() error { _, err := ParseProject("f.toml", []byte(tt.src), Default().Defaults); return err }},
				{"project rules", func() error { _, err := ParseProjectNotify("f.toml", []byte(tt.src)); return err }},
			} {
				err := parse.run()
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("%s: err = %v, want an *Error", parse.what, err)
				}
				if ce.File != "f.toml" || ce.Line != tt.line || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.msg) {
					t.Errorf("%s: got %s (line %d, key %q), want line %d, key %q, message with %q", parse.what, err, ce.Line, ce.Key, tt.line, tt.key, tt.msg)
				}
			}
		})
	}
}

func TestRuleError(t *testing.T) {
	src := []byte("[[notify]]\non = [\"ended\"]\ncommand = [\"a\"]\n\n[[notify]]\non = [\"ended\"]\nwebhook = \"https://x.example/h\"\nsecret_env = \"T\"\n")
	err := RuleError("f.toml", src, 1, &config.NotifyError{Key: "secret_env", Msg: "T is not set"})
	if got, want := err.Error(), "f.toml:8: notify[1].secret_env: T is not set"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	err = RuleError("f.toml", src, 0, errors.New("odd"))
	if got, want := err.Error(), "f.toml:1: notify[0]: odd"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func FuzzParseProjectNotify(f *testing.F) {
	f.Add([]byte("[[notify]]\non = [\"ended\"]\ncommand = [\"x\"]\n"))
	f.Add([]byte("[[notify]]\non = [\"ended:error\", \"crashed\"]\nwebhook = \"https://h.example/x\"\nretries = 3\nsecret_file = \"~/t\"\n"))
	f.Add([]byte("[[notify]]\n[[notify]]\nname = \"a\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParseProjectNotify("fuzz.toml", data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		if err := config.ValidateNotifyRules(rules); err != nil {
			t.Fatalf("accepted rules that do not validate: %v", err)
		}
	})
}
