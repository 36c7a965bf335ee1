package ipc

import "fmt"

// MaxSocketPath is the longest Unix socket path the kernel accepts
// (sun_path is 108 bytes including the terminating NUL).
const MaxSocketPath = 107

// CheckSocketPath reports a socket path the kernel would refuse.
func CheckSocketPath(path string) error {
	if len(path) > MaxSocketPath {
		return fmt.Errorf("socket path %s is %d bytes, over the limit of %d for Unix sockets: choose a shorter path with --socket or SESSIOND_SOCKET", path, len(path), MaxSocketPath)
	}
	return nil
}
