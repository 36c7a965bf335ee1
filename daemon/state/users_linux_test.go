package state

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// testUser is a throwaway account made for one test: its own primary group
// and one supplementary group, removed again when the test ends.
type testUser struct {
	Owner
	Name     string
	ExtraGID int // the supplementary group
}

var userSeq atomic.Int64

// requireRoot skips tests that create users and switch to them: only root
// can. Everything else in the package runs as any user.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates throwaway users and acts as them")
	}
}

// newTestUser creates a user with a primary group of its own and one
// supplementary group (useradd, groupadd), deleted in t.Cleanup.
func newTestUser(t testing.TB) *testUser {
	t.Helper()
	requireRoot(t)
	name := fmt.Sprintf("sdt%d%d", os.Getpid()%100000, userSeq.Add(1))
	extra := name + "x"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	cleanup := func(args ...string) {
		t.Cleanup(func() {
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				t.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
	// userdel removes the user's own group itself on most systems.
	delGroup := func(g string) {
		t.Cleanup(func() {
			if _, err := user.LookupGroup(g); err != nil {
				return
			}
			if out, err := exec.Command("groupdel", g).CombinedOutput(); err != nil {
				t.Errorf("groupdel %s: %v\n%s", g, err, out)
			}
		})
	}
	run("groupadd", name)
	delGroup(name)
	run("groupadd", extra)
	delGroup(extra)
	run("useradd", "-M", "-N", "-g", name, "-G", extra, "-d", "/nonexistent", "-s", "/usr/sbin/nologin", name)
	cleanup("userdel", name)
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroup(extra)
	if err != nil {
		t.Fatal(err)
	}
	tu := &testUser{Name: name}
	tu.UID, _ = strconv.Atoi(u.Uid)
	tu.GID, _ = strconv.Atoi(u.Gid)
	tu.ExtraGID, _ = strconv.Atoi(g.Gid)
	tu.Groups = []int{tu.ExtraGID}
	return tu
}

// sharedDir makes a directory every user can traverse (t.TempDir's parent
// is 0700), removed after the test.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdstate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// userProject makes a project directory owned by u in a shared directory.
func userProject(t testing.TB, u *testUser) (base, project string) {
	t.Helper()
	base = sharedDir(t)
	project = filepath.Join(base, "proj")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	chown(t, project, u)
	return base, project
}

func chown(t testing.TB, path string, u *testUser) {
	t.Helper()
	if err := os.Lchown(path, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
}

// owner returns the uid and gid of path (not following a symlink).
func owner(t testing.TB, path string) (uid, gid int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

// threadIDs reads the credentials of every thread of this process from
// /proc/self/task/*/status: for each thread id, the fsuid, the fsgid and
// the supplementary groups.
type threadCred struct {
	fsuid, fsgid int
	groups       string
}

func threadCreds(t testing.TB) map[int]threadCred {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	creds := make(map[int]threadCred)
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		c, err := readThreadCred("/proc/self/task/" + task.Name() + "/status")
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // the thread ended meanwhile (ESRCH: as it was read)
		}
		if err != nil {
			t.Fatal(err)
		}
		creds[tid] = c
	}
	return creds
}

func readThreadCred(path string) (threadCred, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return threadCred{}, err
	}
	var c threadCred
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		switch k {
		case "Uid":
			c.fsuid, _ = strconv.Atoi(f[3]) // real, effective, saved, fs
		case "Gid":
			c.fsgid, _ = strconv.Atoi(f[3])
		case "Groups":
			c.groups = strings.Join(f, " ")
		}
	}
	return c, nil
}

// waitThreadGone waits until thread tid of this process has ended.
func waitThreadGone(t testing.TB, tid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d still exists 10s after its operation", tid)
		}
		time.Sleep(time.Millisecond)
	}
}

// assertNoTaintedThread fails unless, within a bound, no thread has
// another fsuid or fsgid than the process's own (0 for a root test): an
// operation's thread reports its outcome just before it ends, so it may
// still be seen for a moment, never running anything else.
func assertNoTaintedThread(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var tainted []string
		for tid, c := range threadCreds(t) {
			if c.fsuid != os.Geteuid() || c.fsgid != os.Getegid() {
				tainted = append(tainted, fmt.Sprintf("thread %d: fsuid %d, fsgid %d", tid, c.fsuid, c.fsgid))
			}
		}
		if len(tainted) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads with another identity than the process's (%d, %d) 10s after the operations: %v", os.Geteuid(), os.Getegid(), tainted)
		}
		time.Sleep(time.Millisecond)
	}
}
