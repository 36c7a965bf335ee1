package state

import "golang.org/x/sys/unix"

// canExchange: renameat2(RENAME_EXCHANGE) swaps two names atomically (ext4,
// XFS, btrfs, tmpfs and others); exchange falls back to a rename where the
// file system refuses it.
const canExchange = true

// exchange puts from's file at to, atomically; what was at to, if
// anything, is then at from. Where exchanging is refused (or to does not
// exist), from is renamed over to, and from is then gone.
func exchange(dirfd int, from, to string) error {
	_, err := exchanged(dirfd, from, to)
	return err
}

// exchanged is exchange, saying whether the names were exchanged (false:
// from was renamed over to, or failed to be).
func exchanged(dirfd int, from, to string) (bool, error) {
	err := unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_EXCHANGE)
	switch err {
	case nil:
		return true, nil
	case unix.ENOENT, unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP:
		return false, unix.Renameat(dirfd, from, dirfd, to)
	}
	return false, err
}

// renameNoReplace renames from to to, failing with EEXIST if to exists.
func renameNoReplace(dirfd int, from, to string) error {
	return unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
}
