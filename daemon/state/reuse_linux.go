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
	err := renameat2(dirfd, from, dirfd, to, unix.RENAME_EXCHANGE)
	switch err {
	case nil:
		return true, nil
	case unix.ENOENT, unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP:
		return false, unix.Renameat(dirfd, from, dirfd, to)
	}
	return false, err
}

// placed is exchanged for a name that is most likely not there yet (a
// file's first write, into a spare made ahead for it): from takes the name
// in one call (RENAME_NOREPLACE) where the exchange would fail first with
// ENOENT; a name that is there after all is exchanged with from.
func placed(dirfd int, from, to string) (bool, error) {
	switch err := renameNoReplace(dirfd, from, to); err {
	case nil:
		return false, nil
	case unix.EEXIST, unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP:
		return exchanged(dirfd, from, to)
	default:
		return false, err
	}
}

// renameNoReplace renames from to to, failing with EEXIST if to exists.
func renameNoReplace(dirfd int, from, to string) error {
	return renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
}

// renameat2 is unix.Renameat2, which tests watch.
var renameat2 = unix.Renameat2
