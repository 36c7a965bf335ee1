package term

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessiond/sessiond/daemon/proc"
)

// HolderName is the holder's executable of its own
// (cmd/sessiond/libexec/sessiond-holder): the holder mode without the rest
// of sessiond linked in. A holder lives as long as its terminal session, one
// per terminal, and that executable keeps some 0.35 MiB less of itself in
// memory than sessiond's holder mode does (bench/README.md).
const HolderName = "sessiond-holder"

// holderCommand is what Start runs as the holder when it is given no
// executable: HolderName where proc.Libexec finds it for the program self,
// else self in its holder mode, as a go install of cmd/sessiond alone has
// it.
func holderCommand(self string) (string, []string) {
	if path, ok := proc.Libexec(self, HolderName); ok {
		return path, nil
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	return self, []string{"holder"}
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
