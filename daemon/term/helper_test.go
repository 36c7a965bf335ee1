package term

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The holder is sessiond-holder, run with no arguments, where it is
// installed (proc.Libexec), and `sessiond holder` where it is not.
func TestHolderCommand(t *testing.T) {
	bin := t.TempDir()
	self := filepath.Join(bin, "sessiond")
	for _, f := range []string{self, filepath.Join(bin, HolderName)} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if exe, args := holderCommand(self); exe != filepath.Join(bin, HolderName) || len(args) != 0 {
		t.Errorf("holder %s %q, want %s and no arguments", exe, args, filepath.Join(bin, HolderName))
	}
	if err := os.Remove(filepath.Join(bin, HolderName)); err != nil {
		t.Fatal(err)
	}
	if exe, args := holderCommand(self); exe != self || !slices.Equal(args, []string{"holder"}) {
		t.Errorf("holder %s %q, want %s holder", exe, args, self)
	}
}
