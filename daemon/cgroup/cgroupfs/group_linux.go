package cgroupfs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/ipc"
)

// Group is one session's cgroup: a v2 cgroup (with the leaves above) and,
// on a hybrid host, a cgroup in each v1 hierarchy that has a controller
// v2 lacks.
type Group struct {
	mount string
	// dir is the v2 cgroup's directory; v1 the v1 ones by controller.
	dir string
	v1  map[string]string
	// memory says where memory is accounted: "v2", "v1" or "".
	memory string
}

// NewGroup is the group whose v2 directory is dir, under the v2 mount,
// with its v1 cgroups by controller; memory says where its memory is
// accounted ("v2", "v1" or ""). It makes nothing (package cgroup does).
func NewGroup(mount, dir string, v1 map[string]string, memory string) *Group {
	g := &Group{mount: mount, dir: dir, v1: make(map[string]string, len(v1)), memory: memory}
	for c, d := range v1 {
		g.v1[c] = d
	}
	return g
}

// Open finds the cgroup a session's record names again, under the v2
// mount, after a daemon restart; false when it is gone.
func Open(mount string, rec *ipc.Cgroup) (*Group, bool) {
	if rec == nil || rec.Path == "" || !isDir(rec.Path) {
		return nil, false
	}
	g := &Group{mount: mount, dir: rec.Path, v1: map[string]string{}}
	for c, dir := range rec.V1 {
		if isDir(dir) {
			g.v1[c] = dir
		}
	}
	switch {
	case fileExists(filepath.Join(g.dir, "memory.current")):
		g.memory = "v2"
	case g.v1["memory"] != "":
		g.memory = "v1"
	}
	return g, true
}

// Attach is the group rec names, for a process other than the daemon that
// starts a session's command in it (a terminal holder).
func Attach(rec *ipc.Cgroup) (*Group, error) {
	if rec == nil || rec.Path == "" {
		return nil, errors.New("no cgroup named")
	}
	m, err := ReadMounts()
	if err != nil {
		return nil, err
	}
	if m.V2 == "" || !strings.HasPrefix(rec.Path, m.V2+"/") || !isDir(rec.Path) {
		return nil, fmt.Errorf("%s is not a cgroup of this host", rec.Path)
	}
	g := &Group{mount: m.V2, dir: rec.Path, v1: map[string]string{}}
	for c, d := range rec.V1 {
		g.v1[c] = d
	}
	return g, nil
}

// Record is what the session's record keeps of the group.
func (g *Group) Record() *ipc.Cgroup {
	if g == nil {
		return nil
	}
	r := &ipc.Cgroup{Path: g.dir}
	if len(g.v1) > 0 {
		r.V1 = make(map[string]string, len(g.v1))
		for c, d := range g.v1 {
			r.V1[c] = d
		}
	}
	return r
}

// Dir is the group's v2 directory.
func (g *Group) Dir() string { return g.dir }

// Start runs start so that the process it forks is born in the group's
// leaf: start gets a descriptor of the leaf's directory for clone3's
// CLONE_INTO_CGROUP (syscall.SysProcAttr.CgroupFD), and, where the group
// has v1 cgroups, runs on a thread of its own that has entered them (a
// child begins in its forking thread's cgroups). That thread ends with
// start: it never runs anything else.
func (g *Group) Start(leaf string, start func(cgroupFD int) error) error {
	dir := filepath.Join(g.dir, leaf)
	if leaf != LeafCommand {
		// The command's leaf is made with the group; the others when first
		// used.
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("make the cgroup %s: %w", dir, err)
		}
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the cgroup %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if len(g.v1) == 0 {
		return start(fd)
	}
	errc := make(chan error, 1)
	go g.enterV1(func() error { return start(fd) }, errc)
	return <-errc
}

// EntersByThread says a process joins the group by its forking thread's
// migration (the group has v1 cgroups): Start runs its function on a
// thread of its own that has entered them.
func (g *Group) EntersByThread() bool { return g != nil && len(g.v1) > 0 }

// enterV1 runs f on a thread of its own that has entered the group's v1
// cgroups, and sends what f returns to errc. The thread is never given
// back: it ends with this goroutine, except the main thread, which cannot
// end: on it, enterV1 holds it while another thread does the work.
func (g *Group) enterV1(f func() error, errc chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		defer runtime.UnlockOSThread()
		inner := make(chan error, 1)
		go g.enterV1(f, inner)
		errc <- <-inner
		return
	}
	tid := []byte(strconv.Itoa(unix.Gettid()))
	for c, d := range g.v1 {
		if err := os.WriteFile(filepath.Join(d, "tasks"), tid, 0); err != nil {
			errc <- fmt.Errorf("enter the session's v1 %s cgroup %s: %w", c, d, err)
			return
		}
	}
	errc <- f()
}

// Kill ends every process in the group at once (cgroup.kill; on kernels
// without it, before 5.14, freeze, SIGKILL each, thaw).
func (g *Group) Kill() error { return g.kill(g.dir) }

// KillLeaf ends every process in one leaf of the group.
func (g *Group) KillLeaf(leaf string) error { return g.kill(filepath.Join(g.dir, leaf)) }

func (g *Group) kill(dir string) error {
	if !isDir(dir) {
		return nil
	}
	err := writeString(filepath.Join(dir, "cgroup.kill"), "1")
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT) && isDir(dir):
		// No cgroup.kill: a kernel before 5.14.
		return killEach(dir)
	case errors.Is(err, unix.ENOENT):
		return nil // the cgroup went meanwhile
	}
	return fmt.Errorf("kill the cgroup %s: %w", dir, err)
}

// killEach ends every process under dir without cgroup.kill: the cgroup
// is frozen (cgroup.freeze, 5.2) so that nothing in it forks meanwhile,
// each process of it and of its descendants gets SIGKILL, and the cgroup
// is thawed for the kills to land. Where freezing is not offered either,
// it goes round until a pass finds no process, or gives up after a few.
func killEach(dir string) error {
	frozen := writeString(filepath.Join(dir, "cgroup.freeze"), "1") == nil
	if frozen {
		for i := 0; i < 100 && !eventSet(dir, "frozen"); i++ {
			time.Sleep(time.Millisecond)
		}
	}
	var errs []error
	for pass := 0; pass < 10; pass++ {
		pids := procsUnder(dir)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("kill %d of the cgroup %s: %w", pid, dir, err))
			}
		}
		if frozen || len(errs) > 0 {
			break
		}
	}
	if frozen {
		if err := writeString(filepath.Join(dir, "cgroup.freeze"), "0"); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("thaw the cgroup %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// procsUnder are the pids in dir's cgroup and in its descendants.
func procsUnder(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		for _, f := range strings.Fields(ReadString(filepath.Join(p, "cgroup.procs"))) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// eventSet reports whether cgroup.events of dir says "key 1".
func eventSet(dir, key string) bool {
	for line := range strings.Lines(ReadString(filepath.Join(dir, "cgroup.events"))) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+" "); ok {
			return v == "1"
		}
	}
	return false
}

// writeString writes s to a file of the cgroupfs.
func writeString(p, s string) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(s))
	return err
}

// Populated reports whether any process is in the group (or leaf).
func (g *Group) Populated(leaf string) bool {
	dir := filepath.Join(g.dir, leaf)
	for line := range strings.Lines(ReadString(filepath.Join(dir, "cgroup.events"))) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "populated "); ok {
			return v != "0"
		}
	}
	return false
}

// Procs are the pids in the group's leaf, or, for "", in the whole group
// (its leaves: the cgroups sessiond makes; a session's process can make
// none of its own, the cgroups being the daemon's).
func (g *Group) Procs(leaf string) []int {
	dirs := []string{filepath.Join(g.dir, leaf)}
	if leaf == "" {
		dirs = []string{filepath.Join(g.dir, LeafCommand), filepath.Join(g.dir, LeafSidecars), g.dir}
	}
	var out []int
	for _, d := range dirs {
		for _, f := range strings.Fields(ReadString(filepath.Join(d, "cgroup.procs"))) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// MemoryAccounted reports whether a memory controller accounts for the
// group.
func (g *Group) MemoryAccounted() bool { return g.memory != "" }

// MemoryNow is the memory the group is charged now; false where no memory
// controller accounts for it.
func (g *Group) MemoryNow() (int64, bool) {
	switch g.memory {
	case "v2":
		return readInt(filepath.Join(g.dir, "memory.current")), true
	case "v1":
		return readInt(filepath.Join(g.v1["memory"], "memory.usage_in_bytes")), true
	}
	return 0, false
}

// Wait waits until the group (or leaf) is empty (cgroup.events says so),
// or ctx ends.
func (g *Group) Wait(ctx context.Context, leaf ...string) error {
	l := ""
	if len(leaf) > 0 {
		l = leaf[0]
	}
	delay := time.Millisecond
	for g.Populated(l) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cgroup %s still holds pids %v: %w", filepath.Join(g.dir, l), g.Procs(l), ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
	return nil
}

// Remove removes the group, its leaves first; it must be empty.
func (g *Group) Remove() error {
	var errs []error
	for _, leaf := range []string{LeafCommand, LeafSidecars} {
		if err := rmdir(filepath.Join(g.dir, leaf)); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, err)
		}
	}
	if err := rmdir(g.dir); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("remove %s: %w", g.dir, err))
	}
	for _, d := range g.v1 {
		if err := rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// rmdir removes an empty cgroup, trying again for a moment while the
// kernel says it is busy: a v1 cgroup whose last task was just reaped is
// still held until the kernel lets go of it (as runc retries too).
func rmdir(dir string) error {
	var err error
	for wait := time.Millisecond; ; wait *= 2 {
		if err = unix.Rmdir(dir); !errors.Is(err, unix.EBUSY) || wait > 256*time.Millisecond {
			return err
		}
		time.Sleep(wait)
	}
}

// Memory is what the group uses of memory now, its peak and the OOM
// kills in it; false where no memory controller accounts for it.
func (g *Group) Memory() (ipc.Memory, bool) {
	var m ipc.Memory
	switch g.memory {
	case "v2":
		m.CurrentBytes = readInt(filepath.Join(g.dir, "memory.current"))
		m.PeakBytes = readInt(filepath.Join(g.dir, "memory.peak"))
		m.OOMKills = readKey(filepath.Join(g.dir, "memory.events"), "oom_kill")
	case "v1":
		d := g.v1["memory"]
		m.CurrentBytes = readInt(filepath.Join(d, "memory.usage_in_bytes"))
		m.PeakBytes = readInt(filepath.Join(d, "memory.max_usage_in_bytes"))
		m.OOMKills = readKey(filepath.Join(d, "memory.oom_control"), "oom_kill")
	default:
		return m, false
	}
	return m, true
}

// CPU is the CPU time the group's processes have used, the ended ones
// included (cpu.stat's usage_usec, which cgroup v2 keeps without any
// controller).
func (g *Group) CPU() time.Duration {
	return time.Duration(readKey(filepath.Join(g.dir, "cpu.stat"), "usage_usec")) * time.Microsecond
}

// Pressure is the group's memory pressure: the share of the last ten
// seconds in which some of its processes waited for memory (PSI "some
// avg10", a percentage), and how often memory.high was crossed.
func (g *Group) Pressure() (avg10 float64, highEvents int64) {
	for line := range strings.Lines(ReadString(filepath.Join(g.dir, "memory.pressure"))) {
		if rest, ok := strings.CutPrefix(line, "some "); ok {
			for _, f := range strings.Fields(rest) {
				if v, ok := strings.CutPrefix(f, "avg10="); ok {
					avg10, _ = strconv.ParseFloat(v, 64)
				}
			}
		}
	}
	if g.memory == "v2" {
		highEvents = readKey(filepath.Join(g.dir, "memory.events"), "high")
	}
	return avg10, highEvents
}

func readInt(p string) int64 {
	n, _ := strconv.ParseInt(ReadString(p), 10, 64)
	return n
}

// readKey reads the value of key in a flat-keyed file ("key value" lines).
func readKey(p, key string) int64 {
	for line := range strings.Lines(ReadString(p)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+" "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Mounts are the cgroup hierarchies mounted: the v2 one, and the v1 ones
// by controller.
type Mounts struct {
	V2 string
	V1 map[string]string
}

// ReadMounts reads /proc/self/mountinfo for cgroup hierarchies.
func ReadMounts() (Mounts, error) {
	m := Mounts{V1: map[string]string{}}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return m, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		switch g[0] {
		case "cgroup2":
			if m.V2 == "" {
				m.V2 = f[4]
			}
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				if slices.Contains(Controllers, o) && m.V1[o] == "" {
					m.V1[o] = f[4]
				}
			}
		}
	}
	return m, sc.Err()
}

// ReadString reads a small file of the cgroupfs, "" if it cannot. The
// file is opened with a bare open: os.ReadFile's also asks the poller to
// take it (an epoll_ctl that fails, its fcntls) and stats it for its size,
// which made most of the cost of the files a listing reads for each
// contained session (BenchmarkSessionCgroup/measure).
func ReadString(p string) string {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	// Read with bare system calls: an os.File would ask the descriptor's
	// flags first, for every one of a thousand sessions' counters.
	var small [512]byte
	b := small[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ""
		}
		if n == 0 {
			return strings.TrimSpace(string(b))
		}
		b = b[:len(b)+n]
	}
}
