package state

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzWalkMatchesOpenat2 resolves random paths in a tree full of symlinks
// with openat2(RESOLVE_BENEATH) and with the walk that replaces it on old
// kernels: both must open the same file or fail alike.
func FuzzWalkMatchesOpenat2(f *testing.F) {
	if !haveOpenat2() {
		f.Skip("this kernel has no openat2 to compare the walk with")
	}
	base := f.TempDir()
	root := filepath.Join(base, "root")
	for _, d := range []string{"a/b/c", "d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, file := range []string{"x", "a/y", "a/b/z", "../outside"} {
		if err := os.WriteFile(filepath.Join(root, file), []byte(file), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"l1": "a/b", "a/l2": "../d", "a/b/l3": "../../x", "a/b/c/up": "../../..", "esc": "../outside",
		"a/esc2": "../..", "abs": "/etc", "loop": "loop", "l4": "l1/c/up/a", "dangling": "nothing", "a/b/self": ".",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			f.Fatal(err)
		}
	}
	dirfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { unix.Close(dirfd) })
	for _, s := range []string{"x", "l1/z", "a/l2", "a/b/l3", "a/b/c/up/x", "esc", "a/esc2/outside", "abs", "loop",
		"l4/y", "dangling", "a/b/self/self/z", "a/../x", "../root/x", "x/..", "a/b/c/../../y", ".", "", "a//b/./z", "l1/..", "l1/../y"} {
		f.Add(s)
	}
	describe := func(fd int, err error) string {
		if err != nil {
			return err.Error()
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return "fstat: " + err.Error()
		}
		return fileKind(uint32(st.Mode)) + " " + strconv.FormatUint(st.Ino, 10)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if len(rel) > 200 {
			return
		}
		forceWalk = false
		kernel := describe(openBeneath(dirfd, rel, unix.O_RDONLY|unix.O_NONBLOCK, 0))
		walk := describe(walkBeneath(dirfd, rel, unix.O_RDONLY|unix.O_NONBLOCK, 0))
		if kernel != walk {
			t.Errorf("%q: openat2 gives %s, the walk %s", rel, kernel, walk)
		}
	})
}
