package agent

import (
	"fmt"
	"path/filepath"

	"github.com/sessiond/sessiond/daemon/state"
)

// writeSessionFile writes v as JSON to name in the session's directory,
// creating the directory (0700) if needed; the file is 0600 and written
// atomically. It returns the file's path.
func writeSessionFile(dir, name string, v any) (string, error) {
	if err := state.EnsureDir(dir); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if err := state.WriteJSON(path, v); err != nil {
		return "", fmt.Errorf("write the agent's %s: %w", name, err)
	}
	return path, nil
}

// checkLaunch rejects a Launch that Prepare cannot use.
func checkLaunch(l Launch) error {
	switch {
	case len(l.Argv) == 0 || l.Argv[0] == "":
		return fmt.Errorf("%w: no command", ErrBadLaunch)
	case !filepath.IsAbs(l.SessionDir):
		return fmt.Errorf("%w: session directory %q is not absolute", ErrBadLaunch, l.SessionDir)
	case !filepath.IsAbs(l.Sessionctl):
		return fmt.Errorf("%w: sessionctl path %q is not absolute", ErrBadLaunch, l.Sessionctl)
	case l.ProjectDir != "" && !filepath.IsAbs(l.ProjectDir):
		return fmt.Errorf("%w: project directory %q is not absolute", ErrBadLaunch, l.ProjectDir)
	}
	return nil
}
