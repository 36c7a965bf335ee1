//go:build !linux

package state

import "golang.org/x/sys/unix"

// canSyncFS: without syncfs(2), every write syncs its own file.
const canSyncFS = false

var syncFS = unix.Fsync
