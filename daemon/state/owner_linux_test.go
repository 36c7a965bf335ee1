package state

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunAsIdentity checks that the operation's thread, and only it, has
// the user's fsuid, fsgid and groups, and that the thread is gone after.
func TestRunAsIdentity(t *testing.T) {
	u := newTestUser(t)
	var tid int
	var own threadCred
	var others map[int]threadCred
	err := runAs(&u.Owner, func() error {
		tid = unix.Gettid()
		var err error
		own, err = readThreadCred("/proc/thread-self/status")
		others = threadCreds(t)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := threadCred{fsuid: u.UID, fsgid: u.GID, groups: strconv.Itoa(u.ExtraGID)}
	if own != want {
		t.Errorf("operation's thread: got %+v, want %+v", own, want)
	}
	if tid == os.Getpid() {
		t.Errorf("operation ran on the main thread, which cannot end")
	}
	for other, c := range others {
		if other != tid && (c.fsuid != 0 || c.fsgid != 0) {
			t.Errorf("thread %d had fsuid %d, fsgid %d while the operation ran; want 0, 0", other, c.fsuid, c.fsgid)
		}
	}
	waitThreadGone(t, tid)
	assertNoTaintedThread(t)
}

// TestRunAsKernelRefuses checks that the kernel applies the user's rights:
// root-only files and directories are closed, files created are the
// user's without any chown, and the supplementary group counts.
func TestRunAsKernelRefuses(t *testing.T) {
	u := newTestUser(t)
	base := sharedDir(t)
	secret := filepath.Join(base, "secret")
	writeTestFile(t, secret, "root only")
	rootDir := filepath.Join(base, "rootdir")
	groupDir := filepath.Join(base, "groupdir")
	mine := filepath.Join(base, "mine")
	for _, d := range []string{rootDir, groupDir, mine} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	chown(t, mine, u)
	if err := os.Chown(groupDir, 0, u.ExtraGID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(groupDir, 0o770); err != nil {
		t.Fatal(err)
	}
	err := runAs(&u.Owner, func() error {
		if _, err := os.ReadFile(secret); !errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("read a root-only file: got %v, want permission denied", err)
		}
		if err := os.WriteFile(filepath.Join(rootDir, "x"), nil, 0o600); !errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("create in a root directory: got %v, want permission denied", err)
		}
		if err := os.Chmod(rootDir, 0o700); !errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("chmod a root directory: got %v, want permission denied", err)
		}
		if err := WriteFile(filepath.Join(mine, "f"), []byte("x"), 0o600); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(groupDir, "g"), nil, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(mine, "f"), filepath.Join(groupDir, "g")} {
		if uid, gid := owner(t, f); uid != u.UID || gid != u.GID {
			t.Errorf("%s: owned by %d:%d, want the user's %d:%d", f, uid, gid, u.UID, u.GID)
		}
	}
	if got := mode(t, rootDir); got != 0o755 {
		t.Errorf("root directory mode: got %v, want 0755", got)
	}
	assertNoTaintedThread(t)
}

// TestRunAsPanic checks that a panic comes back to the caller and that the
// thread that had the user's identity is gone all the same.
func TestRunAsPanic(t *testing.T) {
	u := newTestUser(t)
	var tid int
	got := func() (v any) {
		defer func() { v = recover() }()
		_ = runAs(&u.Owner, func() error {
			tid = unix.Gettid()
			panic("boom")
		})
		return nil
	}()
	if got != "boom" {
		t.Fatalf("recovered %v, want the panic value boom", got)
	}
	waitThreadGone(t, tid)
	assertNoTaintedThread(t)
}

// TestRunAsConcurrent runs operations as the user and as root side by side:
// root's keep root's rights throughout, the user's never get them.
func TestRunAsConcurrent(t *testing.T) {
	u := newTestUser(t)
	secret := filepath.Join(sharedDir(t), "secret")
	writeTestFile(t, secret, "root only")
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 200 {
		o := &u.Owner
		if i%2 == 0 {
			o = nil
		}
		wg.Go(func() {
			errs <- runAs(o, func() error {
				_, err := os.ReadFile(secret)
				switch {
				case o == nil && err != nil:
					return fmt.Errorf("as root: %v", err)
				case o != nil && !errors.Is(err, os.ErrPermission):
					return fmt.Errorf("as the user: got %v, want permission denied", err)
				}
				return nil
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	assertNoTaintedThread(t)
}

// TestRunAsSelfSpawnsNoThread checks that a nil owner and the daemon's own
// uid run in place: a user daemon changes nothing.
func TestRunAsSelfSpawnsNoThread(t *testing.T) {
	before := threadSwitches.Load()
	self := &Owner{UID: os.Geteuid(), GID: os.Getegid()}
	for _, o := range []*Owner{nil, self} {
		tid := unix.Gettid()
		runtimeLocked := false
		if err := runAs(o, func() error {
			runtimeLocked = unix.Gettid() == tid
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !runtimeLocked {
			t.Errorf("owner %+v: the operation ran on another thread", o)
		}
	}
	if got := threadSwitches.Load() - before; got != 0 {
		t.Errorf("got %d thread switches, want 0", got)
	}
}

// TestRunAsInvalidOwner checks the ids the kernel would misread.
func TestRunAsInvalidOwner(t *testing.T) {
	for _, o := range []*Owner{{UID: -1, GID: 1}, {UID: 1000, GID: -2}, {UID: 1000, GID: 1000, Groups: []int{-5}}} {
		if err := runAs(o, func() error { return nil }); err == nil {
			t.Errorf("owner %+v: got nil error, want one", o)
		}
	}
}

// TestRunAsWithoutPrivilege checks that a daemon that cannot switch says so
// instead of running with its own rights: a child process without
// CAP_SETUID, run as a throwaway user, tries to act as another one.
func TestRunAsWithoutPrivilege(t *testing.T) {
	if os.Getenv("SESSIOND_STATE_NOPRIV") == "1" {
		err := runAs(&Owner{UID: 0, GID: 0}, func() error { return nil })
		if !errors.Is(err, ErrNoSeparation) {
			fmt.Fprintf(os.Stderr, "got %v, want ErrNoSeparation\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	u := newTestUser(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := sharedDir(t)
	bin := filepath.Join(dir, "state.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestRunAsWithoutPrivilege$")
	cmd.Env = append(os.Environ(), "SESSIOND_STATE_NOPRIV=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %v\n%s", u.UID, err, out)
	}
}

func TestLookupOwner(t *testing.T) {
	u := newTestUser(t)
	o, err := LookupOwner(u.UID)
	if err != nil {
		t.Fatal(err)
	}
	if o.UID != u.UID || o.GID != u.GID || !slices.Contains(o.Groups, u.ExtraGID) {
		t.Errorf("got %+v, want uid %d, gid %d and group %d", o, u.UID, u.GID, u.ExtraGID)
	}
	if c := o.Credential(); c.Uid != uint32(u.UID) || c.Gid != uint32(u.GID) || len(c.Groups) != len(o.Groups) {
		t.Errorf("Credential: got %+v for %+v", c, o)
	}
	if _, err := LookupOwner(1<<31 - 7); err == nil {
		t.Error("an unknown uid: got nil error, want one")
	}
}
