package proc

import (
	"os"
	"path/filepath"
	"syscall"
)

// Libexec finds name, a program of sessiond's own that the daemon runs
// (the terminal holder, the log keeper), installed beside the program self
// (bin/, the release tarball) or in ../libexec/sessiond (the packages'
// /usr/libexec/sessiond); false when it is in neither, and the caller runs
// self in the mode the program stands for. A program is taken only if it
// is a regular executable file, not a link, in a directory, each owned by
// root or by self's owner and writable by nobody else: never anything
// another user could have put or changed there.
func Libexec(self, name string) (string, bool) {
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	dir := filepath.Dir(self)
	for _, path := range []string{filepath.Join(dir, name), filepath.Join(filepath.Dir(dir), "libexec", "sessiond", name)} {
		if trustedLike(path, self, false) && trustedLike(filepath.Dir(path), self, true) {
			return path, true
		}
	}
	return "", false
}

// trustedLike reports whether path is a directory (dir) or a regular
// executable file, not a link, owned by root or by the owner of ref, that
// no group or other user may write.
func trustedLike(path, ref string, dir bool) bool {
	fi, err := os.Lstat(path)
	switch {
	case err != nil, fi.Mode().Perm()&0o022 != 0:
		return false
	case dir && !fi.IsDir(), !dir && (!fi.Mode().IsRegular() || fi.Mode()&0o100 == 0):
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	if st.Uid == 0 {
		return true
	}
	rfi, err := os.Stat(ref)
	if err != nil {
		return false
	}
	rst, ok := rfi.Sys().(*syscall.Stat_t)
	return ok && rst.Uid == st.Uid
}
