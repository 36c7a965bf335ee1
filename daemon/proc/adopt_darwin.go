package proc

import "errors"

// Adopt is not supported on macOS: a recorded live session then ends as
// crashed, its process left alone.
func Adopt(p Process) (*Child, error) {
	return nil, errors.New("adopting a running session is not supported on this platform")
}
