//go:build sessionctl_helpers

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// execHelper runs a command of sessionctl that is a binary of its own,
// sessionctl-mcp (`sessionctl mcp`) or sessionctl-ui (`sessionctl ui`), in
// place of this process. The MCP SDK and the terminal libraries do work in
// their package initialisers and make the binary half as big again: linked
// in here, they cost every other command about 0.9 ms of start-up, most of
// a `sessionctl ps`. sessionctl parses the command line and passes the
// helper what it needs as flags of its own (cmd/sessionctl/libexec). The
// helpers are beside sessionctl (bin/, the release tarball) or in
// ../libexec/sessiond (the packages' /usr/libexec/sessiond). This is the
// build of make build and the packages (tag sessionctl_helpers); a plain
// go build or go install of cmd/sessionctl runs them in its own process
// (helper_inproc.go), so that every command works however it is installed.
func execHelper(name string, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the sessionctl binary, beside which %s is installed: %w", name, err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	dir := filepath.Dir(exe)
	tried := []string{filepath.Join(dir, name), filepath.Join(filepath.Dir(dir), "libexec", "sessiond", name)}
	for _, path := range tried {
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			err := syscall.Exec(path, append([]string{name}, args...), os.Environ())
			return fmt.Errorf("run %s: %w", path, err)
		}
	}
	return fmt.Errorf("%s is not installed: sessionctl looked for it at %s and %s; reinstall sessionctl with it (make build, the packages, or go install github.com/sessiond/sessiond/cmd/...)", name, tried[0], tried[1])
}
