package proc

import (
	"os"
	"time"
)

// clockTick is the kernel's USER_HZ, the unit of /proc's CPU times: 100 on
// every Linux architecture Go supports.
const clockTick = 100

// Usage is what a session's process tree uses.
type Usage struct {
	// CPU is the tree's user and system time so far.
	CPU time.Duration
	// RSS is the resident memory of the tree's processes, in bytes.
	RSS int64
	// Procs is the number of processes counted.
	Procs int
}

// SessionUsage sums the CPU time and resident memory of a session's live
// processes (SessionProcs).
func SessionUsage(sessionID string, pgid int, spawned bool) Usage {
	var u Usage
	page := int64(os.Getpagesize())
	for _, pid := range SessionProcs(sessionID, pgid, spawned) {
		s, err := readStat(pid)
		if err != nil {
			continue
		}
		u.CPU += time.Duration(s.cpu) * time.Second / clockTick
		u.RSS += s.rss * page
		u.Procs++
	}
	return u
}
