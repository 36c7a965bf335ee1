package proc

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// KillSession sends SIGKILL to the process group leader leads and to every
// other process of the session, again and again until none is left (a
// process may fork while it is being killed) or ctx ends: each one proven
// first (Process). It returns the pids still alive when it gave up.
// spawned is as for SessionProcs.
func KillSession(ctx context.Context, sessionID string, leader *Child, spawned bool) []int {
	delay := 2 * time.Millisecond
	confirmed := false
	for {
		_ = leader.SignalGroup(unix.SIGKILL)
		left := SessionProcs(sessionID, leader, spawned)
		if len(left) == 0 {
			// A child of a process being killed is briefly in no one's
			// children list while the kernel moves it to the subreaper:
			// only a second empty look, a moment later, says none is left.
			if confirmed {
				return nil
			}
			confirmed = true
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(delay):
			}
			continue
		}
		confirmed = false
		for _, p := range left {
			_ = p.Signal(unix.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return pids(SessionProcs(sessionID, leader, spawned))
		case <-time.After(delay):
		}
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

func pids(ps []Process) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}
