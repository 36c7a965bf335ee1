package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mountOver mounts fstype on target (a bind mount when fstype is "bind"),
// made read-only if ro, and unmounts it at cleanup. It skips the test when
// the process may not mount (not root, or no CAP_SYS_ADMIN in a container):
// root ignores file modes, so only a mount makes a directory unwritable or
// full for it.
func mountOver(t *testing.T, source, target, fstype, data string, ro bool) {
	t.Helper()
	var err error
	if fstype == "bind" {
		err = syscall.Mount(source, target, "", syscall.MS_BIND, "")
		if err == nil && ro {
			err = syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, "")
			if err != nil {
				syscall.Unmount(target, syscall.MNT_DETACH)
			}
		}
	} else {
		err = syscall.Mount(source, target, fstype, 0, data)
	}
	if err != nil {
		t.Skipf("cannot mount %s on %s here (%v)", fstype, target, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", target, err)
		}
	})
}

func TestReadOnlyObjects(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	objects := filepath.Join(dir, ".git", "objects")
	if os.Geteuid() == 0 {
		mountOver(t, objects, objects, "bind", "", true)
	} else {
		for _, d := range []string{objects, filepath.Join(dir, ".git", "refs")} {
			chmodTree(t, d, 0o555)
		}
	}
	write(t, dir, "new.txt", "content git must store\n")
	before := userState(t, dir)
	_, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef})
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Take with read-only objects = %v, want ErrReadOnly", err)
	}
	t.Logf("error: %v", err)
	if got := userState(t, dir); got != before {
		t.Errorf("repository changed:\n got %s\nwant %s", got, before)
	}
	if exists(dir, ".git/"+RefPrefix+"s") {
		t.Error("a checkpoint ref was created")
	}
	assertClean(t, dir)
}

func chmodTree(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, mode)
		}
		return nil
	})
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	// Move the objects onto a 1 MiB tmpfs and fill it up.
	objects := filepath.Join(dir, ".git", "objects")
	saved := filepath.Join(t.TempDir(), "objects")
	if err := os.Rename(objects, saved); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(objects, 0o755); err != nil {
		t.Fatal(err)
	}
	mountOver(t, "tmpfs", objects, "tmpfs", "size=1m", false)
	if _, err := gitE(dir, nil, "--no-replace-objects", "-c", "core.hooksPath=/dev/null", "version"); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(saved, objects); err != nil {
		t.Fatal(err)
	}
	filler, err := os.Create(filepath.Join(objects, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := filler.Write(buf); err != nil {
			break
		}
	}
	filler.Close()
	write(t, dir, "new.txt", strings.Repeat("content git must store\n", 4096))
	before := userState(t, dir)
	_, err = c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef})
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Take on a full disk = %v, want ErrDiskFull", err)
	}
	t.Logf("error: %v", err)
	if got := userState(t, dir); got != before {
		t.Errorf("repository changed:\n got %s\nwant %s", got, before)
	}
	assertClean(t, dir)
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o444)
	})
}
