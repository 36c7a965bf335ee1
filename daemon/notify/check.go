package notify

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/proc"
)

// Check validates rule beyond its syntax, for "sessiond config check": the
// command exists and is executable, the desktop notifier is installed and
// has a session bus, the secret file is a readable regular file holding
// one line, the secret variable is set. dir is the directory a relative
// command is found from (the project's, for a project's rule); with dir ""
// a relative path such as ./notify.sh, which differs per project, is not
// checked. Files are read with the rights of the calling process.
func Check(rule config.NotifyRule, dir string) error {
	if err := rule.Validate(); err != nil {
		return err
	}
	switch rule.Sink() {
	case config.SinkCommand:
		argv0 := rule.Command[0]
		if strings.Contains(argv0, "/") && !filepath.IsAbs(argv0) && dir == "" {
			return nil
		}
		if dir == "" {
			dir = "/"
		}
		if _, err := proc.LookPath(argv0, dir, os.Environ()); err != nil {
			return &config.NotifyError{Key: "command", Msg: err.Error()}
		}
	case config.SinkDesktop:
		if err := checkDesktop(); err != nil {
			return &config.NotifyError{Key: "desktop", Msg: err.Error()}
		}
	case config.SinkWebhook:
		return checkSecret(rule)
	}
	return nil
}

// checkSecret reads the rule's secret as a send would, without keeping it.
func checkSecret(rule config.NotifyRule) error {
	key := "secret_file"
	if rule.SecretEnv != "" {
		key = "secret_env"
	} else if rule.SecretFile == "" {
		return nil
	}
	c := &compiled{rule: rule, origin: FromDaemon}
	if _, err := readSecret(context.Background(), c, &Event{}); err != nil {
		// "webhook secret: secret_file /x: ..." under the key secret_file
		// reads as "secret_file: /x: ...".
		msg := strings.TrimPrefix(err.Error(), errSecret.Error()+": ")
		return &config.NotifyError{Key: key, Msg: strings.TrimPrefix(msg, key+" ")}
	}
	return nil
}
