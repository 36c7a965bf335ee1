package cgroup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/sessiond/sessiond/daemon/cgroup/cgroupfs"
)

// Modes: where a daemon's session cgroups come from.
const (
	Delegated = "delegated"
	Scope     = "scope"
	Cgroupfs  = "cgroupfs"
	None      = "none"
)

// Controllers are the controllers session limits use.
var Controllers = cgroupfs.Controllers

// Leaves of a session's cgroup (package cgroupfs).
const (
	LeafCommand  = cgroupfs.LeafCommand
	LeafSidecars = cgroupfs.LeafSidecars
)

// Group is one session's cgroup (package cgroupfs): what a process is
// started, counted, accounted, killed and waited for in.
type Group = cgroupfs.Group

// ErrLimit means a limit cannot be applied on this host.
var ErrLimit = errors.New("limit not available")

// Options say what Detect may do.
type Options struct {
	// Name tells this daemon's cgroups from another daemon's on the host
	// (one per state directory).
	Name string
	// Off is containment turned off by configuration.
	Off bool
	// Probe only looks (sessiond doctor): it makes no cgroup, moves no
	// process and asks systemd for nothing, and says what a daemon would
	// do.
	Probe bool
}

// NameFor names the cgroups of the daemon whose state dir is dir, so that
// two daemons of one host never share theirs.
func NameFor(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return "sessiond-" + hex.EncodeToString(sum[:6])
}
