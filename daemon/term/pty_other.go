//go:build !linux

package term

import "os"

// pollable keeps the master as it is: kqueue does not serve terminals on
// every BSD, so reads there stay blocking.
func pollable(master *os.File) (*os.File, error) { return master, nil }
