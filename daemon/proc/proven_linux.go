package proc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Signal sends sig to p if it is still the process recorded. The pidfd is
// opened before its start time is read and the signal goes through it, so
// what is checked is what is signalled: a pid reused in between gets
// nothing. A process that is gone is not an error.
func (p Process) Signal(sig unix.Signal) error {
	return p.signalIf(sig, nil)
}

// signalIf is Signal with a further check of the process's stat.
func (p Process) signalIf(sig unix.Signal, still func(stat) bool) error {
	if err := refuse(p.PID); err != nil {
		return err
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case errors.Is(err, unix.ENOSYS):
		// No pidfds (Linux before 5.3): the check and the kill are two
		// steps.
		st, err := readStat(p.PID)
		if err != nil {
			return nil
		}
		if err := p.check(st, still); err != nil || gone(st) {
			return err
		}
		return ignoreGone(unix.Kill(p.PID, sig))
	case err != nil:
		return fmt.Errorf("signal pid %d: %w", p.PID, err)
	}
	defer unix.Close(fd)
	st, err := readStat(p.PID)
	if err != nil {
		return nil
	}
	if err := p.check(st, still); err != nil || gone(st) {
		return err
	}
	if err := p.checkIno(fd); err != nil {
		return err
	}
	return ignoreGone(unix.PidfdSendSignal(fd, sig, nil, 0))
}

// checkIno proves that the pidfd fd is of p by its inode, where both are
// known.
func (p Process) checkIno(fd int) error {
	if ino := pidfdIno(fd); p.Ino != 0 && ino != 0 && ino != p.Ino {
		return fmt.Errorf("pid %d: %w (another process of the same start time)", p.PID, ErrNotProven)
	}
	return nil
}

// pidfsMagic is the file system type of pidfds on kernels that give each
// process its own inode.
const pidfsMagic = 0x50494446

// pidfdIno returns the inode number of the pidfd fd where it is unique
// to its process, else 0.
func pidfdIno(fd int) uint64 {
	var sfs unix.Statfs_t
	var st unix.Stat_t
	if unix.Fstatfs(fd, &sfs) != nil || sfs.Type != pidfsMagic || unix.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Ino
}

// Identify returns the process pid is now, with its start time and, where
// the kernel gives one, its pidfd inode.
func Identify(pid int) (Process, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil && !errors.Is(err, unix.ENOSYS) {
		return Process{}, fmt.Errorf("identify pid %d: %w", pid, err)
	}
	st, serr := readStat(pid)
	if serr != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return Process{}, serr
	}
	p := Process{PID: pid, Start: st.start}
	if err == nil {
		p.Ino = pidfdIno(fd)
		unix.Close(fd)
	}
	return p, nil
}

// Alive reports whether p is still running: the same start time and, where
// both are known, the same pidfd inode.
func (p Process) Alive() bool {
	if p.PID <= 0 || p.Start == 0 {
		return false
	}
	now, err := Identify(p.PID)
	if err != nil {
		return false
	}
	st, err := readStat(p.PID)
	return err == nil && !gone(st) && now.Start == p.Start && (p.Ino == 0 || now.Ino == 0 || now.Ino == p.Ino)
}

// check proves that st, read through p's pid, is p's.
func (p Process) check(st stat, still func(stat) bool) error {
	if p.Start == 0 || st.start != p.Start {
		return fmt.Errorf("pid %d: %w (started at %d, the record says %d)", p.PID, ErrNotProven, st.start, p.Start)
	}
	if st.pgrp == ownGroup {
		return fmt.Errorf("pid %d: %w (it is in the daemon's process group)", p.PID, ErrNotProven)
	}
	if still != nil && !still(st) {
		return fmt.Errorf("pid %d: %w (it moved)", p.PID, ErrNotProven)
	}
	return nil
}

// SignalGroup sends sig to the process group p leads, p proven first (a
// leader that has exited but is not yet reaped still proves its group):
// to p through its pidfd, and to each other member of the group through
// its own, each checked to be in the group still.
func (p Process) SignalGroup(sig unix.Signal) error {
	if err := refuse(p.PID); err != nil {
		return err
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case errors.Is(err, unix.ENOSYS):
		fd = -1
	case err != nil:
		return fmt.Errorf("signal group %d: %w", p.PID, err)
	default:
		defer unix.Close(fd)
	}
	st, err := readStat(p.PID)
	if err != nil {
		return nil
	}
	if err := p.check(st, nil); err != nil {
		return err
	}
	if fd >= 0 {
		if err := p.checkIno(fd); err != nil {
			return err
		}
	}
	if fd < 0 {
		return ignoreGone(unix.Kill(-p.PID, sig))
	}
	var errs []error
	if !gone(st) {
		errs = append(errs, ignoreGone(unix.PidfdSendSignal(fd, sig, nil, 0)))
	}
	inGroup := func(s stat) bool { return s.pgrp == p.PID }
	for _, m := range allStats() {
		if m.pgrp == p.PID && m.pid != p.PID && !gone(m) {
			errs = append(errs, Process{PID: m.pid, Start: m.start}.signalIf(sig, inGroup))
		}
	}
	return errors.Join(errs...)
}

// gone reports whether st is of a process that has exited.
func gone(st stat) bool { return st.state == 'Z' || st.state == 'X' }

func ignoreGone(err error) error {
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}
