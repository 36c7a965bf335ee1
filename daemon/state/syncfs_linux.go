package state

import "golang.org/x/sys/unix"

// canSyncFS: syncfs(2) writes out one file system, and reports its
// writeback errors (Linux 5.8 and later).
const canSyncFS = true

// syncFS is syncfs(2) on the file system of fd; tests replace it.
var syncFS = unix.Syncfs
