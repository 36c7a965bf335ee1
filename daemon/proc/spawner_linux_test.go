package proc

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openMany opens n more descriptors in the test's table until the test ends.
func openMany(t testing.TB, n int) {
	t.Helper()
	for range n {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
	}
}

func countFDs(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestSpawnerTableStaysSmall: beside many descriptors of the daemon's, a
// command is forked from a table that holds few, starts with stdin, stdout
// and stderr alone, gets its output pipe in blocking mode, and leaves no
// copy of the pipe behind (its reader sees the end when it exits).
func TestSpawnerTableStaysSmall(t *testing.T) {
	openMany(t, 2000)
	r, w, err := os.Pipe() // non-blocking on Go's side
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := Spawn(Spec{Argv: []string{"/bin/sh", "-c", `ls /proc/self/fd; echo flags; sed -n 's/^flags:[[:space:]]*//p' /proc/self/fdinfo/1`}, Dir: t.TempDir(), Output: w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	var out string
	select {
	case out = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the output pipe never ended: a copy of its write end outlived the child")
	}
	wait(t, c)
	listing, flags, ok := strings.Cut(out, "flags\n")
	if !ok {
		t.Fatalf("output %q", out)
	}
	// ls's own listing of the directory takes one descriptor (3).
	if fds := strings.Fields(listing); len(fds) > 4 {
		t.Errorf("the command started with descriptors %v, want 0, 1, 2 (and ls's 3)", fds)
	}
	fl, err := strconv.ParseUint(strings.TrimSpace(flags), 8, 64)
	if err != nil {
		t.Fatalf("flags %q: %v", flags, err)
	}
	if fl&0o4000 != 0 {
		t.Errorf("the command's stdout is non-blocking (flags %o)", fl)
	}
	s := spawnerFor()
	if s == nil {
		t.Fatal("no spawner on this kernel")
	}
	mine := countFDs(t, "/proc/self/fd")
	its := countFDs(t, fmt.Sprintf("/proc/self/task/%d/fd", s.tid))
	t.Logf("the daemon's table %d descriptors, the spawner's %d", mine, its)
	if its > 16 || mine < 2000 {
		t.Errorf("the spawner's table holds %d descriptors beside the daemon's %d", its, mine)
	}
}

// TestSpawnerNeverTheMainThread starts a spawner from the main thread: it
// moves to another, so that the main thread's table, the one pidfd_getfd
// copies from and /proc/self/fd shows, stays the process's; and a command
// it forks gets the descriptors it was given.
func TestSpawnerNeverTheMainThread(t *testing.T) {
	s := &spawner{reqs: make(chan *spawnRequest)}
	ready := make(chan error, 1)
	moved := make(chan struct{})
	go onMainThread(func() {
		if unix.Gettid() != os.Getpid() {
			t.Error("not on the main thread")
		}
		s.serve(ready, nil) // returns once another thread serves
		close(moved)
	})
	select {
	case <-moved:
	case <-time.After(10 * time.Second):
		t.Fatal("the spawner kept the main thread")
	}
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	if s.tid == os.Getpid() {
		t.Fatal("the spawner is the main thread")
	}
	openMany(t, 100)
	if n := countFDs(t, "/proc/self/fd"); n < 100 {
		t.Errorf("/proc/self/fd shows %d descriptors, not the process's table", n)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sys := syscall.ProcAttr{Env: []string{}, Files: []uintptr{^uintptr(0), w.Fd(), w.Fd()}}
	pid, off, err := s.forkExec("/bin/sh", []string{"/bin/sh", "-c", "echo through the pipe"}, &sys)
	w.Close()
	if off || err != nil {
		t.Fatalf("fork: off %v, %v", off, err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil && err != syscall.ECHILD {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if string(b) != "through the pipe\n" {
		t.Errorf("the command wrote %q to its stdout", b)
	}
}

// TestSpawnerErrors: a command that cannot be executed is an error naming
// it, as from os.StartProcess.
func TestSpawnerErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/x", []byte("#!/nonexistent/interp\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Spawn(Spec{Argv: []string{"x"}, Path: dir + "/x", Dir: dir, Output: os.Stderr})
	if err == nil || !strings.Contains(err.Error(), "fork/exec "+dir+"/x") {
		t.Fatalf("err = %v, want a fork/exec error naming the command", err)
	}
	_, err = Spawn(Spec{Argv: []string{"/bin/true"}, Dir: dir + "/none", Output: os.Stderr})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v, want the missing directory", err)
	}
}

// BenchmarkSpawnBesideDescriptors: a start and its exit, with the daemon
// holding n more descriptors, forked by the spawner and (here) by the
// caller.
func BenchmarkSpawnBesideDescriptors(b *testing.B) {
	for _, n := range []int{0, 12000} {
		for _, here := range []bool{false, true} {
			name := fmt.Sprintf("fds=%d/spawner", n)
			if here {
				name = fmt.Sprintf("fds=%d/caller", n)
			}
			b.Run(name, func(b *testing.B) {
				openMany(b, n)
				forkHere = here
				defer func() { forkHere = false }()
				for b.Loop() {
					c, err := Spawn(Spec{Argv: []string{"/bin/true"}, Dir: "/", Output: os.Stderr})
					if err != nil {
						b.Fatal(err)
					}
					<-c.Done()
				}
			})
		}
	}
}
