package term

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The daemon runs sessiond-holder where it is installed beside sessiond or
// in ../libexec/sessiond, and sessiond's own holder mode where it is not,
// or where the helper is anything less trusted than sessiond itself.
func TestHolderCommand(t *testing.T) {
	exe := func(t *testing.T, path string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		helper string // relative to the prefix; "" for none
		mode   os.FileMode
		dir    bool // the helper's path is a directory
		want   string
	}{
		{name: "beside sessiond", helper: "bin/" + HolderName, mode: 0o755, want: "bin/" + HolderName},
		{name: "in libexec", helper: "libexec/sessiond/" + HolderName, mode: 0o755, want: "libexec/sessiond/" + HolderName},
		{name: "none", want: "bin/sessiond"},
		{name: "not executable", helper: "bin/" + HolderName, mode: 0o644, want: "bin/sessiond"},
		{name: "writable by its group", helper: "bin/" + HolderName, mode: 0o775, want: "bin/sessiond"},
		{name: "writable by anyone", helper: "libexec/sessiond/" + HolderName, mode: 0o757, want: "bin/sessiond"},
		{name: "a directory", helper: "bin/" + HolderName, dir: true, want: "bin/sessiond"},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := t.TempDir()
			self := filepath.Join(prefix, "bin", "sessiond")
			exe(t, self, 0o755)
			switch {
			case c.dir:
				if err := os.MkdirAll(filepath.Join(prefix, c.helper), 0o755); err != nil {
					t.Fatal(err)
				}
			case c.helper != "":
				exe(t, filepath.Join(prefix, c.helper), c.mode)
			}
			got, args := holderCommand(self)
			if want := filepath.Join(prefix, c.want); got != want {
				t.Errorf("holder %s, want %s", got, want)
			}
			if wantArgs := []string{"holder"}; c.want == "bin/sessiond" && !slices.Equal(args, wantArgs) {
				t.Errorf("sessiond's holder mode runs with %q, want %q", args, wantArgs)
			} else if c.want != "bin/sessiond" && len(args) != 0 {
				t.Errorf("sessiond-holder runs with %q, want no arguments", args)
			}
		})
	}

	// A helper of another user than sessiond's (and not root's) is not run.
	t.Run("another user's", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("giving a file to another user needs root (the tests run as root here and in CI)")
		}
		prefix := t.TempDir()
		self := filepath.Join(prefix, "bin", "sessiond")
		exe(t, self, 0o755)
		helper := filepath.Join(prefix, "bin", HolderName)
		exe(t, helper, 0o755)
		if err := os.Chown(helper, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if got, _ := holderCommand(self); got != self {
			t.Errorf("holder %s, want sessiond itself: the helper is uid 65534's", got)
		}
	})

	// sessiond reached through a symbolic link (/usr/local/bin/sessiond ->
	// /opt/sessiond/bin/sessiond) finds the helper beside the real file.
	t.Run("through a link", func(t *testing.T) {
		prefix := t.TempDir()
		self := filepath.Join(prefix, "opt", "bin", "sessiond")
		exe(t, self, 0o755)
		exe(t, filepath.Join(prefix, "opt", "bin", HolderName), 0o755)
		link := filepath.Join(prefix, "usr", "bin", "sessiond")
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(self, link); err != nil {
			t.Fatal(err)
		}
		if got, _ := holderCommand(link); got != filepath.Join(prefix, "opt", "bin", HolderName) {
			t.Errorf("holder %s, want the one beside %s", got, self)
		}
	})
}
