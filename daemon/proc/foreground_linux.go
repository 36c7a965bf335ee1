package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// SignalForeground sends sig to the foreground process group of the
// terminal c's process has, when that is not c's own group: a shell on a
// terminal runs its jobs in groups of their own, and the one in the
// foreground is the one a person's ctrl-C would reach. c is proven first,
// and each process of that group is proven to be in it and in c's
// terminal session.
func (c *Child) SignalForeground(sig unix.Signal) error {
	st, err := readStat(c.PID)
	if err != nil || !leaderProven(c) {
		return nil
	}
	fg, sid := st.tpgid, st.sid
	if fg <= 1 || fg == c.PID || sid <= 1 {
		return nil
	}
	ours := func(s stat) bool { return s.pgrp == fg && s.sid == sid }
	var errs []error
	for _, m := range allStats() {
		if ours(m) && !gone(m) {
			errs = append(errs, Process{PID: m.pid, Start: m.start}.signalIf(sig, ours))
		}
	}
	return errors.Join(errs...)
}
