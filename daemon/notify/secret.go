package notify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/sessiond/sessiond/daemon/state"
)

// maxSecret bounds a secret: it is one header value.
const maxSecret = 4 << 10

// errSecret marks every failure to get a webhook's secret. Its messages name
// the file or variable, never the content.
var errSecret = errors.New("webhook secret")

// readSecret returns the secret of c's webhook for ev, read now from its
// file or variable, or "" when the rule has none. The daemon's own rules
// are read with the daemon's rights; a project's rules, under a root
// daemon, with the session owner's: its file is read by a helper process
// running as that user, and its variable only from the session's
// environment, so a project cannot name a file or variable of root's and
// have it sent away.
func readSecret(ctx context.Context, c *compiled, ev *Event) (string, error) {
	r := &c.rule
	var (
		raw string
		src string
	)
	switch {
	case r.SecretEnv != "":
		src = "secret_env " + r.SecretEnv
		v, ok := lookupEnv(ev.Env, r.SecretEnv)
		if !ok && (c.origin == FromDaemon || os.Geteuid() != 0) {
			v, ok = os.LookupEnv(r.SecretEnv)
		}
		if !ok {
			return "", fmt.Errorf("%w: %s is not set", errSecret, src)
		}
		raw = v
	case r.SecretFile != "":
		path := r.SecretFile
		if rest, ok := strings.CutPrefix(path, "~/"); ok {
			home := ownerHome(ev.Owner)
			if home == "" {
				return "", fmt.Errorf("%w: secret_file %s: no home directory to expand ~ in", errSecret, path)
			}
			path = strings.TrimSuffix(home, "/") + "/" + rest
		}
		src = "secret_file " + path
		if err := checkOwner(c.origin, ev.Owner); err != nil {
			return "", fmt.Errorf("%w: %s: %v", errSecret, src, err)
		}
		var err error
		if cred := credential(ev.Owner); c.origin == FromProject && cred != nil {
			raw, err = readSecretFile(state.FilesOf(ev.Owner), path)
			if err != nil {
				err = fmt.Errorf("cannot be read as user %d (%v)", cred.Uid, plainError(err))
			}
		} else {
			raw, err = readSecretFile(state.FilesOf(nil), path)
			err = plainError(err)
		}
		if err != nil {
			return "", fmt.Errorf("%w: %s: %v", errSecret, src, err)
		}
	default:
		return "", nil
	}
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", fmt.Errorf("%w: %s is empty", errSecret, src)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("%w: %s holds more than one line or a control character; it must be one header value", errSecret, src)
	}
	return s, nil
}

// readSecretFile reads a secret file through files (the one way in): a
// regular file, opened without blocking (a FIFO cannot hold the sender),
// at most maxSecret bytes.
func readSecretFile(files state.Files, path string) (string, error) {
	b, err := files.ReadFile(path, maxSecret)
	if errors.Is(err, state.ErrTooLarge) {
		return "", fmt.Errorf("larger than %d bytes", maxSecret)
	}
	return string(b), err
}

// plainError is err without the path it names (the caller names it).
func plainError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	if errors.Is(err, state.ErrFileType) {
		return errors.New("not a regular file")
	}
	return err
}
