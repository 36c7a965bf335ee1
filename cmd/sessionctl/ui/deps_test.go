package ui

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLightAtStartUp keeps out of sessionctl the packages whose init does
// work on every start of every command: the clipboard package (that the
// bubbles text input and text area import) searches $PATH for xclip, xsel
// and the like in its init.
func TestLightAtStartUp(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/sessiond/sessiond/cmd/sessionctl").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"github.com/atotto/clipboard", "charm.land/bubbles/v2/textinput", "charm.land/bubbles/v2/textarea"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f {
				t.Errorf("sessionctl links %s, whose init costs every command its start-up", pkg)
			}
		}
	}
}
