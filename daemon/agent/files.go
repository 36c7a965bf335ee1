package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/sessiond/sessiond/daemon/state"
)

// writeSessionFile writes v as JSON to name through l.Write, or else in the
// session's directory, creating the directory (0700) if needed; the file is
// 0600 and written atomically. It returns the file's path.
func writeSessionFile(l Launch, name string, v any) (string, error) {
	if l.Write != nil {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return "", fmt.Errorf("write the agent's %s: %w", name, err)
		}
		path, err := l.Write(name, append(data, '\n'))
		if err != nil {
			return "", fmt.Errorf("write the agent's %s: %w", name, err)
		}
		return path, nil
	}
	if err := state.EnsureDir(l.SessionDir); err != nil {
		return "", err
	}
	path := filepath.Join(l.SessionDir, name)
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
