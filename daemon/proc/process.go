package proc

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Process is one process, known by its pid and by its start time read
// with it: a later process that reuses the pid is another Process. Every
// signal the daemon sends to a process it is not the unreaped parent of
// goes through a Process, and reaches it only once that proof holds.
type Process struct {
	PID int
	// Start is the process's start time (clock ticks after boot on Linux,
	// microseconds since the epoch on macOS); 0 proves nothing.
	Start uint64
	// Ino is the inode number of a pidfd of the process where the kernel
	// gives each process its own (pidfs, Linux 6.9 and later): unlike a
	// start time, in clock ticks, no two processes of a boot share it.
	// 0 where not known.
	Ino uint64
}

// ErrNotProven means a pid no longer names the process recorded (its
// start time differs, or none was recorded), or names the daemon itself or
// a process of its own process group: nothing is signalled.
var ErrNotProven = errors.New("not the process recorded")

// refuse rejects what the daemon must never signal whatever a record
// says: init, itself and its own process group.
func refuse(pid int) error {
	if pid <= 1 || pid == self || pid == ownGroup {
		return fmt.Errorf("pid %d: %w (init, the daemon or its process group)", pid, ErrNotProven)
	}
	return nil
}

var (
	self     = os.Getpid()
	ownGroup = unix.Getpgrp()
)

// Process returns the process c is.
func (c *Child) Process() Process { return Process{PID: c.PID, Start: c.StartTime, Ino: c.Ino} }

// Signal sends sig to c's process: directly while c is the daemon's own
// child and not yet reaped (the reaper is held off meanwhile, so the pid
// cannot be another process's), else as to a Process.
func (c *Child) Signal(sig unix.Signal) error {
	if done, err := c.signalOwn(c.PID, sig); done {
		return err
	}
	return c.Process().Signal(sig)
}

// SignalGroup sends sig to the process group c leads, as Signal does.
func (c *Child) SignalGroup(sig unix.Signal) error {
	if done, err := c.signalOwn(-c.PID, sig); done {
		return err
	}
	return c.Process().SignalGroup(sig)
}

// signalOwn signals target (c's pid, or its group) if c is the daemon's
// own unreaped child, and reports whether it was.
func (c *Child) signalOwn(target int, sig unix.Signal) (bool, error) {
	if !c.own {
		return false, nil
	}
	if err := refuse(c.PID); err != nil {
		return true, err
	}
	children.mu.RLock()
	defer children.mu.RUnlock()
	if children.m[c.PID] != c {
		return false, nil
	}
	err := unix.Kill(target, sig)
	if errors.Is(err, unix.ESRCH) {
		err = nil
	}
	return true, err
}

// Found is a process found by the session its environment names.
type Found struct {
	Process
	// Session is its SESSIOND_SESSION_ID; UID the user it runs as.
	Session string
	UID     int
}
