//go:build !linux

package state

import (
	"fmt"
	"os"
	"runtime"
)

// asOwner refuses: only Linux has per-thread filesystem credentials
// (setfsuid), and switching the whole process would hand every other
// goroutine the user's identity mid-operation.
func asOwner(o *Owner, fn func() error) error {
	return fmt.Errorf("act as uid %d from a daemon running as uid %d: not supported on %s; run sessiond as that user (%w)",
		o.UID, os.Geteuid(), runtime.GOOS, ErrNoSeparation)
}
