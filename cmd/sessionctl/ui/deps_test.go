package ui

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLightAtStartUp keeps out of sessionctl and of the dashboard's own
// binary the packages whose init does work on every start: lipgloss detects the terminal's
// colours on stdout in its init (reading terminfo, and running `tmux info`
// inside tmux), and the clipboard package, which the bubbles text input
// and text area import, searches $PATH for xclip, xsel and the like. The
// bubbles packages that style with lipgloss (help, viewport, list, table,
// ...) are kept out through it.
func TestLightAtStartUp(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/sessiond/sessiond/cmd/sessionctl",
		"github.com/sessiond/sessiond/cmd/sessionctl/libexec/sessionctl-ui").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"charm.land/lipgloss/v2", "github.com/atotto/clipboard"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f {
				t.Errorf("sessionctl or sessionctl-ui links %s, whose init costs every start", pkg)
			}
		}
	}
}
