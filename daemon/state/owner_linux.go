//go:build linux

package state

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// asOwner runs fn on an OS thread of its own whose supplementary groups,
// fsgid and fsuid are o's. Only that thread changes: the raw per-thread
// system calls are used, not syscall.Setgroups or Setuid, which Go applies
// to every thread of the process. The goroutine exits while still locked to
// the thread, so the runtime ends the thread instead of reusing it: its
// credentials die with it, also when fn panics. The runtime never clones a
// new thread from a locked one (it asks its template thread), so the
// identity cannot be inherited either.
func asOwner(o *Owner, fn func() error) error {
	done := make(chan outcome, 1)
	go runLocked(o, fn, done, nil)
	r := <-done
	if r.panicked {
		panic(r.value)
	}
	return r.err
}

// outcome is how an operation on its own thread ended.
type outcome struct {
	err      error
	panicked bool
	value    any
}

// runLocked locks its goroutine to the OS thread, takes o's identity, runs
// fn and sends the outcome to done, exiting still locked. If the thread is
// the process's main thread, which cannot end (the runtime parks it for
// good), it keeps that thread locked and idle while a second goroutine,
// which then cannot land on it, does the work elsewhere; once that one holds
// its own thread, the main thread is let go unchanged. locked, if not nil,
// is closed once the goroutine holds its thread.
func runLocked(o *Owner, fn func() error, done chan<- outcome, locked chan<- struct{}) {
	runtime.LockOSThread()
	if locked != nil {
		close(locked)
	}
	if unix.Gettid() == unix.Getpid() {
		elsewhere := make(chan struct{})
		go runLocked(o, fn, done, elsewhere)
		<-elsewhere
		runtime.UnlockOSThread()
		return
	}
	var r outcome
	defer func() {
		if v := recover(); v != nil {
			r = outcome{panicked: true, value: v}
		}
		done <- r
	}()
	if err := takeIdentity(o); err != nil {
		r.err = err
		return
	}
	r.err = fn()
}

// takeIdentity sets the calling thread's supplementary groups, fsgid and
// fsuid to o's, in that order: once fsuid leaves 0 the kernel drops the
// thread's filesystem capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER, ...), so
// permission checks are o's and new files are o's.
func takeIdentity(o *Owner) error {
	gids := make([]uint32, len(o.Groups))
	for i, g := range o.Groups {
		gids[i] = uint32(g)
	}
	var p unsafe.Pointer
	if len(gids) > 0 {
		p = unsafe.Pointer(&gids[0])
	}
	if _, _, e := unix.RawSyscall(sysSetgroups, uintptr(len(gids)), uintptr(p), 0); e != 0 {
		return fmt.Errorf("act as uid %d: set supplementary groups: %w (%w)", o.UID, e, ErrNoSeparation)
	}
	runtime.KeepAlive(gids)
	unix.RawSyscall(sysSetfsgid, uintptr(o.GID), 0, 0)
	if got := fsid(sysSetfsgid); got != o.GID {
		return fmt.Errorf("act as uid %d: fsgid is %d, not %d: the daemon lacks CAP_SETGID (%w)", o.UID, got, o.GID, ErrNoSeparation)
	}
	unix.RawSyscall(sysSetfsuid, uintptr(o.UID), 0, 0)
	if got := fsid(sysSetfsuid); got != o.UID {
		return fmt.Errorf("act as uid %d: fsuid is %d: the daemon lacks CAP_SETUID (%w)", o.UID, got, ErrNoSeparation)
	}
	return nil
}

// fsid returns the thread's current fsuid or fsgid: setfsuid and setfsgid
// return the previous value and change nothing when given an invalid id.
func fsid(nr uintptr) int {
	prev, _, _ := unix.RawSyscall(nr, math.MaxUint32, 0, 0)
	return int(uint32(prev))
}
