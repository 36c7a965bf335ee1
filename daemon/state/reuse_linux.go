package state

import "golang.org/x/sys/unix"

// canExchange: renameat2(RENAME_EXCHANGE) swaps two names atomically (ext4,
// XFS, btrfs, tmpfs and others); exchanged falls back to a rename where the
// file system refuses it.
const canExchange = true

// exchanged puts from's file at to, atomically, and says whether what was
// at to is then at from (the names were exchanged). Where exchanging is
// refused (or to does not exist), from is renamed over to, and from is
// then gone (false).
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
