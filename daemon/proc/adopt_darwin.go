package proc

import "errors"

// Adopt is not supported on macOS: a recorded live session is then killed
// and ended as crashed.
func Adopt(pid int, startTime uint64) (*Child, error) {
	return nil, errors.New("adopting a running session is not supported on this platform")
}
