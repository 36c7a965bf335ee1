package notify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiond/sessiond/config"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "notify.sh", "exit 0\n")
	if err := os.WriteFile(filepath.Join(dir, "plain.sh"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "token")
	if err := os.WriteFile(secret, []byte("Bearer x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SESSIOND_TEST_CHECK_TOKEN", "Bearer y")
	hook := "https://hooks.example.com/x"
	tests := []struct {
		name string
		rule config.NotifyRule
		dir  string
		key  string // "" for no error
		msg  string
	}{
		{"command in PATH", config.NotifyRule{Command: []string{"sh", "-c", "true"}}, "", "", ""},
		{"absolute command", config.NotifyRule{Command: []string{filepath.Join(dir, "notify.sh")}}, "", "", ""},
		{"missing command", config.NotifyRule{Command: []string{"no-such-notifier"}}, "", "command", "not found in PATH"},
		{"not executable", config.NotifyRule{Command: []string{filepath.Join(dir, "plain.sh")}}, "", "command", "not executable"},
		{"relative, project known", config.NotifyRule{Command: []string{"./notify.sh"}}, dir, "", ""},
		{"relative, missing in project", config.NotifyRule{Command: []string{"./nope.sh"}}, dir, "command", "no such file"},
		{"relative, per project", config.NotifyRule{Command: []string{"./nope.sh"}}, "", "", ""},
		{"webhook without secret", config.NotifyRule{Webhook: hook}, "", "", ""},
		{"secret file", config.NotifyRule{Webhook: hook, SecretFile: secret}, "", "", ""},
		{"missing secret file", config.NotifyRule{Webhook: hook, SecretFile: secret + ".gone"}, "", "secret_file", "no such file"},
		{"secret env", config.NotifyRule{Webhook: hook, SecretEnv: "SESSIOND_TEST_CHECK_TOKEN"}, "", "", ""},
		{"unset secret env", config.NotifyRule{Webhook: hook, SecretEnv: "SESSIOND_TEST_CHECK_UNSET"}, "", "secret_env", "is not set"},
		{"bad url", config.NotifyRule{Webhook: "gopher://x"}, "", "webhook", "not http or https"},
		{"unknown event", config.NotifyRule{On: []string{"oops"}, Desktop: true}, "", "on", "unknown event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rule.On == nil {
				tt.rule.On = []string{"ended"}
			}
			err := Check(tt.rule, tt.dir)
			if tt.key == "" {
				if err != nil {
					t.Fatalf("Check = %v", err)
				}
				return
			}
			var ne *config.NotifyError
			if !errors.As(err, &ne) || ne.Key != tt.key || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Check = %v, want %s: ...%s...", err, tt.key, tt.msg)
			}
			if strings.Contains(err.Error(), "Bearer") {
				t.Errorf("Check error %q shows the secret", err)
			}
		})
	}
}
