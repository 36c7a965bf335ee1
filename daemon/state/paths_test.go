package state

import (
	"strings"
	"testing"

	"github.com/sessiond/sessiond/ipc"
)

// TestProjectIDAsTheClients: the daemon's project id of a directory is the
// one sessionctl sends for it (ipc's, which does without crypto/sha256).
func TestProjectIDAsTheClients(t *testing.T) {
	for _, dir := range []string{"/", "/tmp/p/1", "/home/ann/work/café ☕", "/" + strings.Repeat("deep/", 40)} {
		if got, want := ipc.ProjectID(dir), ProjectID(dir); got != want {
			t.Errorf("%s: sessionctl says %s, the daemon %s", dir, got, want)
		}
	}
}
