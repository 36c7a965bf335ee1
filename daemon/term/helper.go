package term

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// HolderName is the holder's executable of its own
// (cmd/sessiond/libexec/sessiond-holder): the holder mode without the rest
// of sessiond linked in. A holder lives as long as its terminal session, one
// per terminal, and that executable keeps some 0.4 MiB less of itself in
// memory than sessiond's holder mode does (bench/README.md).
const HolderName = "sessiond-holder"

// holderCommand is what Start runs as the holder when it is given no
// executable: HolderName beside the program self (bin/, the release
// tarball) or in ../libexec/sessiond (the packages' /usr/libexec/sessiond),
// else self in its holder mode, as a go install of cmd/sessiond alone has
// it. A helper is run only if it is a regular executable file owned by
// root or by self's owner and writable by nobody else: it is never anything
// less trusted than the daemon's own executable.
func holderCommand(self string) (string, []string) {
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	dir := filepath.Dir(self)
	for _, path := range []string{filepath.Join(dir, HolderName), filepath.Join(filepath.Dir(dir), "libexec", "sessiond", HolderName)} {
		if trustedLike(path, self) {
			return path, nil
		}
	}
	return self, []string{"holder"}
}

// trustedLike reports whether path is a regular executable file, owned by
// root or by the owner of ref, that no group or other user may write.
func trustedLike(path, ref string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o100 == 0 || fi.Mode()&0o022 != 0 {
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

// selfHolder is holderCommand for this program.
func selfHolder() (string, []string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("find the sessiond binary for the terminal holder: %w", err)
	}
	exe, args := holderCommand(self)
	return exe, args, nil
}
