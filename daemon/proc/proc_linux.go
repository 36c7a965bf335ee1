package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// EnableSubreaper makes the daemon a child subreaper, so that orphaned
// descendants of its sessions are reparented to it rather than to init.
func EnableSubreaper() error {
	err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	subreaper = err == nil
	return err
}

// stat is what the supervisor needs from /proc/PID/stat.
type stat struct {
	pid, ppid, pgrp int
	// sid is the process's session; tpgid its terminal's foreground
	// process group (0 for none).
	sid, tpgid int
	state      byte
	start      uint64
	// cpu is utime+stime in clock ticks; rss is in pages.
	cpu uint64
	rss int64
}

func readStat(pid int) (stat, error) {
	var buf [512]byte
	s, _, err := readStatBuf(pid, buf[:0])
	return s, err
}

// readStatBuf reads /proc/PID/stat into buf (returned for reuse) with bare
// system calls, three a file: os.ReadFile's seven (the poller's fcntls, the
// stat for the size) were most of the cost of a walk of /proc.
func readStatBuf(pid int, buf []byte) (stat, []byte, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return stat{}, buf, &os.PathError{Op: "open", Path: path, Err: err}
	}
	buf = readFD(fd, buf[:0])
	unix.Close(fd)
	s, err := parseStat(pid, buf)
	return s, buf, err
}

// parseStat parses /proc/PID/stat; the command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(pid int, b []byte) (stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	// f[k] is field k+3 of proc(5): f[0] the state, f[19] starttime, f[21]
	// rss. Only the fields used are kept, and none is copied.
	var f [22][]byte
	n := 0
	for rest := b[i+2:]; n < len(f); n++ {
		for len(rest) > 0 && isSpace(rest[0]) {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			break
		}
		j := 0
		for j < len(rest) && !isSpace(rest[j]) {
			j++
		}
		f[n], rest = rest[:j], rest[j:]
	}
	if n < 20 {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	s := stat{pid: pid, state: f[0][0]}
	s.ppid = int(atoi(f[1]))
	s.pgrp = int(atoi(f[2]))
	s.sid = int(atoi(f[3]))
	s.tpgid = int(atoi(f[5]))
	s.start = uint64(atoi(f[19]))
	s.cpu = uint64(atoi(f[11]) + atoi(f[12]))
	if n > 21 {
		s.rss = atoi(f[21])
	}
	return s, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' }

// atoi is strconv.ParseInt of a field of /proc's, without the string: 0
// for anything but an optionally negative decimal that fits.
func atoi(b []byte) int64 {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

// StartTime returns the process's start time in clock ticks after boot.
func StartTime(pid int) (uint64, error) {
	s, err := readStat(pid)
	return s.start, err
}

// Alive reports whether pid is a live (not zombie) process that started at
// startTime; a pid reused by another process is not alive, and a start
// time of 0 proves nothing.
func Alive(pid int, startTime uint64) bool {
	s, err := readStat(pid)
	if err != nil || s.state == 'Z' || s.state == 'X' {
		return false
	}
	return startTime != 0 && s.start == startTime
}

// BootID identifies the running kernel boot; start times compare only
// within one boot.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// allStats reads every process's stat.
func allStats() []stat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	out := make([]stat, 0, len(names))
	buf := make([]byte, 0, 512)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		var s stat
		if s, buf, err = readStatBuf(pid, buf); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// subreaper records whether EnableSubreaper succeeded: only then do all
// escaped descendants of a session come back to the daemon.
var subreaper bool

// childrenOf lists the direct children of pid, from every thread's children
// file (cheap: no scan of /proc). The files are read with bare system
// calls, three a file: os.ReadFile's seven (the poller's fcntls, the stat
// for the size) made most of a reading, and every session's end takes two
// or three readings of the daemon's children (KillSession).
func childrenOf(pid int) []int {
	base := "/proc/" + strconv.Itoa(pid) + "/task/"
	d, err := os.Open(base)
	if err != nil {
		return nil
	}
	tasks, _ := d.Readdirnames(-1)
	d.Close()
	var out []int
	buf := make([]byte, 0, 4096)
	for _, t := range tasks {
		fd, err := unix.Open(base+t+"/children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		buf = readFD(fd, buf[:0])
		unix.Close(fd)
		out = appendPIDs(out, buf)
	}
	return out
}

// readProcFile reads a file of /proc with bare system calls: os.ReadFile
// asks for its size and flags and tries the poller first, six calls more
// for each process an end looks at.
func readProcFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return readFD(fd, make([]byte, 0, 4096)), nil
}

// readFD appends what is left to read of fd to buf.
func readFD(fd int, buf []byte) []byte {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			return buf
		}
		buf = buf[:len(buf)+n]
	}
}

// appendPIDs appends the numbers of a children file ("12 34 ") to out.
func appendPIDs(out []int, b []byte) []int {
	n, digits := 0, false
	for _, c := range b {
		if c >= '0' && c <= '9' {
			n, digits = n*10+int(c-'0'), true
			continue
		}
		if digits {
			out = append(out, n)
		}
		n, digits = 0, false
	}
	if digits {
		out = append(out, n)
	}
	return out
}

// selfChildren lists the daemon's own children. Reading them costs a file
// per thread of the daemon, each listing every child, and every session's
// end and every SIGCHLD wants them: callers that ask while a reading runs
// share the next one, as a group commit shares a sync. A caller gets a
// reading begun after it asked, so it sees every child there was then.
func selfChildren() *childList {
	w := make(chan *childList, 1)
	lead := make(chan struct{}, 1)
	s := &childScans
	s.mu.Lock()
	s.queue = append(s.queue, childWaiter{w, lead})
	if s.reading {
		s.mu.Unlock()
		select {
		case kids := <-w:
			return kids
		case <-lead:
		}
	} else {
		s.reading = true
		s.mu.Unlock()
	}
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()
	kids := &childList{pids: childrenOf(os.Getpid())}
	for _, b := range batch {
		b.kids <- kids
	}
	s.mu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].lead <- struct{}{}
	} else {
		s.reading = false
	}
	s.mu.Unlock()
	return <-w
}

// childScans are the callers of selfChildren waiting for a reading, and
// whether one of them is reading for the others.
var childScans struct {
	mu      sync.Mutex
	reading bool
	queue   []childWaiter
}

type childWaiter struct {
	kids chan *childList
	lead chan struct{}
}

// childList is one reading of the daemon's children, shared by the
// callers that asked for it. The session a child's environment names is
// read once per reading, however many sessions ask about it: the ends of
// 1000 sessions at once would otherwise read the environment of every
// orphan once per session.
type childList struct {
	pids []int

	mu       sync.Mutex
	sessions map[int]string
}

// session returns the SESSIOND_SESSION_ID in pid's environment ("" when
// none, or the process is gone).
func (l *childList) session(pid int) string {
	l.mu.Lock()
	sid, ok := l.sessions[pid]
	l.mu.Unlock()
	if ok {
		return sid
	}
	sid = envSession(pid)
	l.mu.Lock()
	if l.sessions == nil {
		l.sessions = map[int]string{}
	}
	l.sessions[pid] = sid
	l.mu.Unlock()
	return sid
}

// envSession reads SESSIOND_SESSION_ID from pid's environment.
func envSession(pid int) string {
	env, err := readProcFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	const key = "SESSIOND_SESSION_ID="
	for len(env) > 0 {
		v, rest, _ := bytes.Cut(env, []byte{0})
		if id, ok := bytes.CutPrefix(v, []byte(key)); ok {
			return string(id)
		}
		env = rest
	}
	return ""
}

// reapOrphans reaps zombie children of the daemon that are neither session
// leaders nor helper commands: descendants that came back to the subreaper.
// Called with the helpers lock held.
func reapOrphans() {
	for _, pid := range selfChildren().pids {
		if isHelper(pid) || isChild(pid) {
			continue
		}
		if s, err := readStat(pid); err != nil || s.state != 'Z' {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
}

func isChild(pid int) bool {
	children.mu.RLock()
	defer children.mu.RUnlock()
	_, ok := children.m[pid]
	return ok
}

func hasMarker(pid int, marker []byte) bool {
	env, err := readProcFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && (bytes.Contains(env, marker) || bytes.HasSuffix(env, marker[:len(marker)-1]))
}

// SessionProcs returns the live processes of a session whose leader (and
// process group) is leader. spawned says the daemon started the leader
// itself: then, as a subreaper, every process of the session is below the
// leader or below an orphan that came back to the daemon, and only those
// are looked at. Otherwise (an adopted session, no subreaper) every
// process is: the leader's group, the leader's descendants, and every
// process whose environment carries SESSIOND_SESSION_ID=sessionID (which
// survives setsid and double forks). The leader and its group count only
// while the leader is proven (its start time); a process counts as a
// descendant only while its parent is still the one it was found under.
// Each is returned with its start time, as read when it was found.
func SessionProcs(sessionID string, leader *Child, spawned bool) []Process {
	if !spawned || !subreaper {
		return scanSessionProcs(sessionID, leader)
	}
	type found struct{ pid, parent int }
	member := map[int]bool{}
	var queue []found
	if leader != nil && leaderProven(leader) {
		queue = append(queue, found{leader.PID, -1})
	}
	kids := selfChildren()
	for _, pid := range kids.pids {
		// Helper commands run with the session's environment (its hook,
		// its preflight) belong to it too.
		if (leader != nil && pid == leader.PID) || isChild(pid) {
			continue
		}
		if sessionID != "" && kids.session(pid) == sessionID {
			queue = append(queue, found{pid, self})
		}
	}
	var out []Process
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		if member[f.pid] {
			continue
		}
		st, err := readStat(f.pid)
		if err != nil || (f.parent >= 0 && st.ppid != f.parent) {
			continue
		}
		member[f.pid] = true
		if !gone(st) {
			p := Process{PID: f.pid, Start: st.start}
			if f.parent < 0 {
				p = leader.Process()
			}
			out = append(out, p)
		}
		for _, k := range childrenOf(f.pid) {
			queue = append(queue, found{k, f.pid})
		}
	}
	return out
}

// leaderProven reports whether the leader's pid is still its process: the
// daemon's own unreaped child, or a process with its start time.
func leaderProven(c *Child) bool {
	if c.own {
		children.mu.RLock()
		mine := children.m[c.PID] == c
		children.mu.RUnlock()
		if mine {
			return true
		}
	}
	return c.Process().Alive()
}

// scanSessionProcs finds a session's processes by scanning all of /proc.
func scanSessionProcs(sessionID string, leader *Child) []Process {
	stats := allStats()
	kids := map[int][]int{}
	byPID := make(map[int]stat, len(stats))
	member := map[int]bool{}
	pgid := 0
	if leader != nil {
		pgid = leader.PID
	}
	proven := leader != nil && leaderProven(leader)
	for _, s := range stats {
		if gone(s) {
			continue
		}
		byPID[s.pid] = s
		kids[s.ppid] = append(kids[s.ppid], s.pid)
		if proven && (s.pgrp == pgid || s.pid == pgid) {
			member[s.pid] = true
		}
	}
	marker := []byte("SESSIOND_SESSION_ID=" + sessionID + "\x00")
	for _, s := range stats {
		if member[s.pid] || gone(s) || s.pid == self || sessionID == "" {
			continue
		}
		if hasMarker(s.pid, marker) {
			member[s.pid] = true
		}
	}
	// Everything below a member is a member too.
	queue := make([]int, 0, len(member))
	for pid := range member {
		queue = append(queue, pid)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, k := range kids[pid] {
			if !member[k] {
				member[k] = true
				queue = append(queue, k)
			}
		}
	}
	delete(member, self)
	out := make([]Process, 0, len(member))
	for pid := range member {
		p := Process{PID: pid, Start: byPID[pid].start}
		if proven && pid == pgid {
			p = leader.Process()
		}
		out = append(out, p)
	}
	return out
}

// Catches reports whether pid has a handler installed for sig (the SigCgt
// mask of /proc/PID/status). Catching is not handling: a runtime may catch
// a signal only to re-raise its default action.
func Catches(pid int, sig unix.Signal) (bool, error) {
	b, err := readProcFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("parse SigCgt of %d: %w", pid, err)
			}
			return mask&(1<<(uint(sig)-1)) != 0, nil
		}
	}
	return false, fmt.Errorf("no SigCgt in /proc/%d/status", pid)
}

// CatchesSupported reports whether Catches can tell on this platform.
const CatchesSupported = true

// SessionsByEnv returns the live processes whose environment carries
// SESSIOND_SOCKET=socket, with the SESSIOND_SESSION_ID each carries and
// the user it runs as: the processes of every session started by a daemon
// on that socket (or of anyone who copied those variables).
func SessionsByEnv(socket string) []Found {
	marker := []byte("SESSIOND_SOCKET=" + socket + "\x00")
	var out []Found
	for _, s := range allStats() {
		if s.pid == self || gone(s) {
			continue
		}
		dir := "/proc/" + strconv.Itoa(s.pid)
		env, err := readProcFile(dir + "/environ")
		if err != nil || !(bytes.Contains(env, marker) || bytes.HasSuffix(env, marker[:len(marker)-1])) {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(dir, &st) != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if id, ok := bytes.CutPrefix(kv, []byte("SESSIOND_SESSION_ID=")); ok {
				out = append(out, Found{Process: Process{PID: s.pid, Start: s.start}, Session: string(id), UID: int(st.Uid)})
			}
		}
	}
	return out
}

// KillHelpers kills every helper command running with sessionID's
// environment (its hooks, its notification commands), with its process
// group: a contained session's cgroup does not hold them, and they are
// the session's all the same. It looks at the helpers alone, not at every
// process, by the environment each was started with, and returns how many
// it killed.
func KillHelpers(sessionID string) int {
	if sessionID == "" {
		return 0
	}
	var pids []int
	helpers.pidsMu.Lock()
	for pid, sid := range helpers.pids {
		if sid == sessionID {
			pids = append(pids, pid)
		}
	}
	helpers.pidsMu.Unlock()
	n := 0
	for _, pid := range pids {
		p, err := Identify(pid)
		if err != nil {
			continue
		}
		_ = p.SignalGroup(unix.SIGKILL)
		if p.Signal(unix.SIGKILL) == nil {
			n++
		}
	}
	return n
}
