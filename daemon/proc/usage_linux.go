package proc

import (
	"bytes"
	"os"
	"strconv"
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

// UsageQuery names one session for UsageOf: its id, its leader's pid (and
// process group), and whether the daemon spawned the leader itself (then,
// as a subreaper, every process of the session is below the leader or
// below a helper command of the daemon; an adopted session's processes are
// found also by process group and by the SESSIOND_SESSION_ID in their
// environment, which survives setsid and double forks).
type UsageQuery struct {
	SessionID string
	PGID      int
	Spawned   bool
}

// UsageOf sums the CPU time and resident memory of each session's live
// processes, from one reading of /proc: its cost is a stat per process on
// the machine, whatever the number of sessions.
func UsageOf(qs []UsageQuery) []Usage {
	out := make([]Usage, len(qs))
	if len(qs) == 0 {
		return out
	}
	stats := allStats()
	self := os.Getpid()
	byPID := make(map[int]*stat, len(stats))
	kids := make(map[int][]int, len(stats))
	groups := map[int][]int{}
	adopted := !subreaper
	for _, q := range qs {
		adopted = adopted || !q.Spawned
	}
	for i := range stats {
		s := &stats[i]
		if s.state == 'Z' || s.state == 'X' {
			continue
		}
		byPID[s.pid] = s
		kids[s.ppid] = append(kids[s.ppid], s.pid)
		if adopted {
			groups[s.pgrp] = append(groups[s.pgrp], s.pid)
		}
	}
	// The processes that carry a session's id in their environment: the
	// daemon's helper commands (hooks, preflight) and, when a session was
	// adopted, any process (the environment survives setsid and double
	// forks).
	marked := map[string][]int{}
	for pid, s := range byPID {
		if pid == self || !(adopted || (s.ppid == self && !isChild(pid))) {
			continue
		}
		if id := envSessionID(pid); id != "" {
			marked[id] = append(marked[id], pid)
		}
	}
	page := int64(os.Getpagesize())
	member := map[int]bool{}
	var queue []int
	for i, q := range qs {
		clear(member)
		queue = queue[:0]
		if q.PGID > 1 {
			queue = append(queue, q.PGID)
			if adopted {
				queue = append(queue, groups[q.PGID]...)
			}
		}
		if q.SessionID != "" {
			queue = append(queue, marked[q.SessionID]...)
		}
		for len(queue) > 0 {
			pid := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			if member[pid] || pid == self {
				continue
			}
			member[pid] = true
			queue = append(queue, kids[pid]...)
		}
		for pid := range member {
			if s := byPID[pid]; s != nil {
				out[i].CPU += time.Duration(s.cpu) * time.Second / clockTick
				out[i].RSS += s.rss * page
				out[i].Procs++
			}
		}
	}
	return out
}

// envSessionID returns the SESSIOND_SESSION_ID in pid's environment, or "".
func envSessionID(pid int) string {
	env, err := readProcFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	const key = "SESSIOND_SESSION_ID="
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(key)); ok {
			return string(v)
		}
	}
	return ""
}
