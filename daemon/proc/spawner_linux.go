package proc

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The spawner forks the sessions' commands from a thread whose descriptor
// table is its own and small.
//
// # Why
//
// A fork copies the forking thread's descriptor table, and the exec that
// follows closes every close-on-exec descriptor in the copy; both are work
// per descriptor (the kernel's dup_fd, filp_flush, dnotify_flush,
// locks_remove_posix). A daemon holds three descriptors a session (the
// output pipe, the log and its stamps), so a start beside 4 000 sessions
// copied and closed 12 000 descriptors and took twice as long as one on an
// empty daemon. Forked from a thread that unshared its table
// (unshare(CLONE_FILES)) and closed its copy of everything but the Go
// runtime's own poller descriptors, a start costs the same beside any
// number of sessions.
//
// # How a descriptor gets there
//
// The descriptors a command is given (stdin, the output, the cgroup it is
// born in) are the daemon's; the spawner copies each into its own table
// with pidfd_getfd from the daemon's main thread, forks, and closes its
// copies. Only raw system calls run on the thread: nothing there opens a
// file through package os (which would register the number with the
// poller, a number that names another file in the daemon's table), and
// the runtime makes new threads from its template thread, not from a
// locked one, so no other thread ever shares the small table.
//
// Where the kernel refuses any of it (no pidfd_getfd before Linux 5.6, a
// seccomp filter), commands are forked by their caller as before.
type spawner struct {
	reqs chan *spawnRequest
	// self is a pidfd of the daemon, in the spawner's table.
	self int
	// tid is the spawner thread's, for tests.
	tid int
}

type spawnRequest struct {
	path string
	argv []string
	attr syscall.ProcAttr // Files and Sys.CgroupFD are the daemon's descriptors
	pid  int
	err  error
	// off says the spawner cannot copy descriptors: the caller forks.
	off  bool
	done chan struct{}
}

var (
	spawnerOnce sync.Once
	theSpawner  *spawner
)

// spawnerFor returns the spawner, started on first use, or nil where the
// kernel does not allow one.
func spawnerFor() *spawner {
	spawnerOnce.Do(func() {
		s := &spawner{reqs: make(chan *spawnRequest)}
		ready := make(chan error, 1)
		go s.serve(ready, nil)
		if <-ready == nil {
			theSpawner = s
		}
	})
	return theSpawner
}

// forkExec runs syscall.ForkExec on the spawner's thread, or returns
// off = true when the spawner cannot (the caller then forks itself).
func (s *spawner) forkExec(path string, argv []string, attr *syscall.ProcAttr) (pid int, off bool, err error) {
	r := &spawnRequest{path: path, argv: argv, attr: *attr, done: make(chan struct{})}
	s.reqs <- r
	<-r.done
	return r.pid, r.off, r.err
}

// serve is the spawner's thread: it is never given back to the runtime
// (the goroutine ends only with the process, or at once when the set-up
// fails, and a locked thread ends with its goroutine). locked, if set, is
// called once the goroutine has its thread.
//
// The thread is never the process's main thread: pidfd_getfd copies from
// the main thread's table (a pidfd names the thread group's leader), and
// /proc/self/fd shows it, so that table must stay the daemon's. A
// goroutine that finds itself on the main thread hands the work to
// another, which gets another thread while this one holds the main one.
func (s *spawner) serve(ready chan<- error, locked func()) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		moved := make(chan struct{})
		go s.serve(ready, func() { close(moved) })
		<-moved
		runtime.UnlockOSThread()
		return
	}
	if locked != nil {
		locked()
	}
	if err := s.setUp(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for r := range s.reqs {
		r.pid, r.off, r.err = s.fork(r)
		close(r.done)
	}
}

// setUp gives the thread a table of its own and empties it of all but the
// runtime's poller descriptors (an epoll and its eventfd, which the
// runtime may touch from any thread) and stdin, stdout and stderr.
func (s *spawner) setUp() error {
	s.tid = unix.Gettid()
	if s.tid == unix.Getpid() {
		return errors.New("the spawner must not be the main thread")
	}
	if err := unix.Unshare(unix.CLONE_FILES); err != nil {
		return err
	}
	if err := closeAllButPoller(); err != nil {
		return err
	}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return err
	}
	s.self = fd
	// Prove the copy works before any command relies on it.
	probe, err := unix.PidfdGetfd(s.self, 0, 0)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return nil // no stdin to copy: the call itself is there
		}
		return err
	}
	return unix.Close(probe)
}

// closeAllButPoller closes, in the calling thread's table, every
// descriptor above stderr but epolls and eventfds.
func closeAllButPoller() error {
	dir, err := unix.Open("/proc/thread-self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	var fds []int
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(dir, buf)
		if err != nil {
			return err
		}
		if n <= 0 {
			break
		}
		var names []string
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
		for _, name := range names {
			if fd, err := strconv.Atoi(name); err == nil && fd > 2 && fd != dir {
				fds = append(fds, fd)
			}
		}
	}
	link := make([]byte, 256)
	for _, fd := range fds {
		n, err := unix.Readlinkat(dir, strconv.Itoa(fd), link)
		if err != nil {
			continue // closed meanwhile
		}
		switch string(link[:n]) {
		case "anon_inode:[eventpoll]", "anon_inode:[eventfd]":
			continue
		}
		_ = unix.Close(fd)
	}
	return nil
}

// fork copies the request's descriptors into the spawner's table, forks
// and execs, and closes the copies.
func (s *spawner) fork(r *spawnRequest) (pid int, off bool, err error) {
	var copies []int
	defer func() {
		for _, fd := range copies {
			_ = unix.Close(fd)
		}
	}()
	mine := map[int]int{}
	get := func(fd int) (int, error) {
		if c, ok := mine[fd]; ok {
			return c, nil
		}
		c, err := unix.PidfdGetfd(s.self, fd, 0)
		if err != nil {
			return -1, err
		}
		copies = append(copies, c)
		mine[fd] = c
		return c, nil
	}
	attr := r.attr
	attr.Files = make([]uintptr, len(r.attr.Files))
	for i, fd := range r.attr.Files {
		if fd == ^uintptr(0) { // a nil file: closed in the child
			attr.Files[i] = fd
			continue
		}
		c, err := get(int(fd))
		if err != nil {
			return 0, true, nil
		}
		attr.Files[i] = uintptr(c)
	}
	if r.attr.Sys != nil {
		sys := *r.attr.Sys
		if sys.UseCgroupFD {
			if sys.CgroupFD, err = get(sys.CgroupFD); err != nil {
				return 0, true, nil
			}
		}
		attr.Sys = &sys
	}
	pid, err = syscall.ForkExec(r.path, r.argv, &attr)
	return pid, false, err
}
