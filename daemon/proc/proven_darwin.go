package proc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Signal sends sig to p if it is still the process recorded. macOS has no
// pidfds: the check and the kill are two steps.
func (p Process) Signal(sig unix.Signal) error {
	return p.kill(p.PID, sig)
}

// SignalGroup sends sig to the process group p leads, p proven first.
func (p Process) SignalGroup(sig unix.Signal) error {
	return p.kill(-p.PID, sig)
}

func (p Process) kill(target int, sig unix.Signal) error {
	if err := refuse(p.PID); err != nil {
		return err
	}
	start, err := StartTime(p.PID)
	if err != nil {
		return nil
	}
	if p.Start == 0 || start != p.Start {
		return fmt.Errorf("pid %d: %w", p.PID, ErrNotProven)
	}
	if pg, err := unix.Getpgid(p.PID); err == nil && pg == ownGroup {
		return fmt.Errorf("pid %d: %w (it is in the daemon's process group)", p.PID, ErrNotProven)
	}
	err = unix.Kill(target, sig)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// Identify returns the process pid is now, with its start time.
func Identify(pid int) (Process, error) {
	start, err := StartTime(pid)
	if err != nil {
		return Process{}, err
	}
	return Process{PID: pid, Start: start}, nil
}

// Alive reports whether p is still running: the same start time.
func (p Process) Alive() bool { return Alive(p.PID, p.Start) }
