package cgroup

import (
	"crypto/sha256"
	"encoding/hex"
)

// NameFor names the cgroups of the daemon whose state dir is dir, so that
// two daemons of one host never share theirs.
func NameFor(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return "sessiond-" + hex.EncodeToString(sum[:6])
}
