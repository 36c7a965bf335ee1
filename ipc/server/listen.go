package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// ErrDaemonRunning is returned by Listen when a live daemon answers on the path.
var ErrDaemonRunning = errors.New("another sessiond is already listening")

// Listen opens the daemon's socket at path with the given permissions
// (0600 for a user daemon). A live daemon on the path is an error; a stale
// socket file left by a dead one is replaced.
func Listen(path string, perm fs.FileMode) (net.Listener, error) {
	if err := ipc.CheckSocketPath(path); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket: remove it or choose another path", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrDaemonRunning)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The peer-credential check guards the moment between bind and chmod.
	if err := os.Chmod(path, perm); err != nil {
		l.Close()
		return nil, fmt.Errorf("set socket permissions: %w", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(true)
	return l, nil
}
