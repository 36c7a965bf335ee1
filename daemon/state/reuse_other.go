//go:build !linux

package state

import "golang.org/x/sys/unix"

// canExchange is false here: WriteJSONReusing is WriteJSON.
const canExchange = false

func exchanged(dirfd int, from, to string) (bool, error) {
	return false, unix.Renameat(dirfd, from, dirfd, to)
}

func placed(dirfd int, from, to string) (bool, error) { return exchanged(dirfd, from, to) }

func renameNoReplace(int, string, string) error { return unix.ENOSYS }
