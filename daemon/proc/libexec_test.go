package proc

import (
	"os"
	"path/filepath"
	"testing"
)

// A program of sessiond's own is found beside sessiond or in
// ../libexec/sessiond, and not where it is anything less trusted than
// sessiond itself.
func TestLibexec(t *testing.T) {
	const name = "sessiond-holder"
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
		dir    bool        // the helper's path is a directory
		link   bool        // the helper is a symbolic link to sessiond
		in     os.FileMode // the mode of the helper's directory; 0 for 0755
		want   string
	}{
		{name: "beside sessiond", helper: "bin/" + name, mode: 0o755, want: "bin/" + name},
		{name: "in libexec", helper: "libexec/sessiond/" + name, mode: 0o755, want: "libexec/sessiond/" + name},
		{name: "none", want: ""},
		{name: "not executable", helper: "bin/" + name, mode: 0o644, want: ""},
		{name: "writable by its group", helper: "bin/" + name, mode: 0o775, want: ""},
		{name: "writable by anyone", helper: "libexec/sessiond/" + name, mode: 0o757, want: ""},
		{name: "a directory", helper: "bin/" + name, dir: true, want: ""},
		// A link could point at any root-owned program (a shell).
		{name: "a link", helper: "bin/" + name, link: true, want: ""},
		{name: "in a directory its group may write", helper: "libexec/sessiond/" + name, mode: 0o755, in: 0o775, want: ""},
		{name: "in a directory anyone may write", helper: "libexec/sessiond/" + name, mode: 0o755, in: 0o1777, want: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := t.TempDir()
			self := filepath.Join(prefix, "bin", "sessiond")
			exe(t, self, 0o755)
			switch {
			case c.link:
				if err := os.Symlink(self, filepath.Join(prefix, c.helper)); err != nil {
					t.Fatal(err)
				}
			case c.dir:
				if err := os.MkdirAll(filepath.Join(prefix, c.helper), 0o755); err != nil {
					t.Fatal(err)
				}
			case c.helper != "":
				exe(t, filepath.Join(prefix, c.helper), c.mode)
			}
			if c.in != 0 {
				if err := os.Chmod(filepath.Dir(filepath.Join(prefix, c.helper)), c.in); err != nil {
					t.Fatal(err)
				}
			}
			got, ok := Libexec(self, name)
			if want := filepath.Join(prefix, c.want); c.want == "" && (ok || got != "") {
				t.Errorf("found %s, want none", got)
			} else if c.want != "" && (!ok || got != want) {
				t.Errorf("found %q (%v), want %s", got, ok, want)
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
		helper := filepath.Join(prefix, "bin", name)
		exe(t, helper, 0o755)
		if err := os.Chown(helper, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if got, ok := Libexec(self, name); ok {
			t.Errorf("found %s, uid 65534's, beside root's sessiond", got)
		}
	})

	// sessiond reached through a symbolic link (/usr/local/bin/sessiond ->
	// /opt/sessiond/bin/sessiond) finds the helper beside the real file.
	t.Run("through a link", func(t *testing.T) {
		prefix := t.TempDir()
		self := filepath.Join(prefix, "opt", "bin", "sessiond")
		exe(t, self, 0o755)
		exe(t, filepath.Join(prefix, "opt", "bin", name), 0o755)
		link := filepath.Join(prefix, "usr", "bin", "sessiond")
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(self, link); err != nil {
			t.Fatal(err)
		}
		if got, _ := Libexec(link, name); got != filepath.Join(prefix, "opt", "bin", name) {
			t.Errorf("found %q, want the one beside %s", got, self)
		}
	})
}
