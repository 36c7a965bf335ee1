package cgroup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

// cpuPeriod is the period cpu_max's quota is given in, in microseconds.
const cpuPeriod = 100000

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

// New makes the cgroup of session id with limits l. A limit the host
// cannot apply is an error that says why (wrapping ErrLimit), unless l is
// best-effort: then it is left out, and notices say so.
func (h *Host) New(id string, l config.Limits) (g *Group, notices []string, err error) {
	if !h.Enabled() {
		notices, err = h.Fit(l)
		return nil, notices, err
	}
	l, notices, err = h.fit(l)
	if err != nil {
		return nil, nil, err
	}
	g = h.group(id)
	// A v1 cgroup only for a limit that needs it: a process enters one
	// only by a migration (its forking thread's, here), which costs a
	// grace period of the kernel's (10-25 ms a start on this kind of
	// host), where a v2 cgroup is entered at birth for nothing.
	if l.MemoryMax == 0 {
		delete(g.v1, "memory")
	}
	if l.PidsMax == 0 {
		delete(g.v1, "pids")
	}
	if l.CPUWeight == 0 && l.CPUPercent() == 0 {
		delete(g.v1, "cpu")
	}
	g.memory = memoryWhere(h.v2["memory"], g.v1["memory"] != "")
	res := &cgroup2.Resources{}
	if h.v2["memory"] && (l.MemoryMax > 0 || l.MemoryHigh > 0) {
		res.Memory = &cgroup2.Memory{}
		if l.MemoryMax > 0 {
			v := int64(l.MemoryMax)
			res.Memory.Max = &v
			// No swap beyond the bound: a bound that swaps is no bound.
			zero := int64(0)
			res.Memory.Swap = &zero
		}
		if l.MemoryHigh > 0 {
			v := int64(l.MemoryHigh)
			res.Memory.High = &v
		}
	}
	if h.v2["pids"] && l.PidsMax > 0 {
		res.Pids = &cgroup2.Pids{Max: l.PidsMax}
	}
	if h.v2["cpu"] && (l.CPUWeight > 0 || l.CPUPercent() > 0) {
		res.CPU = &cgroup2.CPU{}
		if l.CPUWeight > 0 {
			w := uint64(l.CPUWeight)
			res.CPU.Weight = &w
		}
		if p := l.CPUPercent(); p > 0 {
			q := int64(math.Ceil(p / 100 * cpuPeriod))
			per := uint64(cpuPeriod)
			res.CPU.Max = cgroup2.NewCPUMax(&q, &per)
		}
	}
	// The base gives its children the controllers already (Detect): the
	// cgroup is made, then given its limits, if any.
	for _, dir := range []string{g.dir, filepath.Join(g.dir, LeafCommand)} {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EAGAIN) {
				err = fmt.Errorf("%w (the cgroup subtree is full: cgroup.max.descendants of %s)", err, filepath.Dir(g.dir))
			}
			_ = g.Remove()
			return nil, nil, fmt.Errorf("make the session's cgroup %s: %w", g.dir, err)
		}
	}
	if len(res.Values()) > 0 {
		rel, err := filepath.Rel(h.mount, g.dir)
		if err == nil {
			var m *cgroup2.Manager
			if m, err = cgroup2.Load("/"+rel, cgroup2.WithMountpoint(h.mount)); err == nil {
				err = m.Update(res)
			}
		}
		if err != nil {
			_ = g.Remove()
			return nil, nil, fmt.Errorf("set the limits of the session's cgroup %s: %w", g.dir, err)
		}
	}
	if len(g.v1) > 0 {
		if err := g.newV1(h, l); err != nil {
			_ = g.Remove()
			return nil, nil, fmt.Errorf("make the session's v1 cgroups: %w", err)
		}
	}
	return g, notices, nil
}

const limitsHint = `see sessiond doctor, or set limits = "best-effort" to run without what the host lacks`

// fit checks l against the controllers the host has: those it lacks are
// an error, or, best-effort, left out with a notice.
func (h *Host) fit(l config.Limits) (config.Limits, []string, error) {
	var notices []string
	lack := func(key, why string, clear func()) error {
		if l.BestEffort() {
			notices = append(notices, fmt.Sprintf("%s not applied: %s", key, why))
			clear()
			return nil
		}
		return fmt.Errorf("%w: %s: %s; %s", ErrLimit, key, why, limitsHint)
	}
	where := func(c string) string { return h.info.Controllers[c] }
	checks := []struct {
		key, ctrl string
		set       bool
		v1ok      bool
		clear     func()
	}{
		{"memory_max", "memory", l.MemoryMax > 0, true, func() { l.MemoryMax = 0 }},
		{"memory_high", "memory", l.MemoryHigh > 0, false, func() { l.MemoryHigh = 0 }},
		{"pids_max", "pids", l.PidsMax > 0, true, func() { l.PidsMax = 0 }},
		{"cpu_weight", "cpu", l.CPUWeight > 0, true, func() { l.CPUWeight = 0 }},
		{"cpu_max", "cpu", l.CPUPercent() > 0, true, func() { l.CPUMax = "" }},
	}
	for _, c := range checks {
		if !c.set {
			continue
		}
		var err error
		switch where(c.ctrl) {
		case "v2":
		case "v1":
			if !c.v1ok {
				err = lack(c.key, "the "+c.ctrl+" controller is on a cgroup v1 hierarchy here, which has no "+c.key+" (cgroup v2 only)", c.clear)
			}
		default:
			err = lack(c.key, "the "+c.ctrl+" controller is not delegated to "+h.base, c.clear)
		}
		if err != nil {
			return l, nil, err
		}
	}
	return l, notices, nil
}

// group is session id's cgroup, made or not.
func (h *Host) group(id string) *Group {
	g := &Group{mount: h.mount, dir: filepath.Join(h.base, id), v1: map[string]string{}}
	for c, dir := range h.v1 {
		g.v1[c] = filepath.Join(dir, id)
	}
	g.memory = memoryWhere(h.v2["memory"], g.v1["memory"] != "")
	return g
}

func memoryWhere(v2, v1 bool) string {
	switch {
	case v2:
		return "v2"
	case v1:
		return "v1"
	}
	return ""
}

// newV1 makes the group's v1 cgroups with the limits that go there.
func (g *Group) newV1(h *Host, l config.Limits) error {
	res := &specs.LinuxResources{}
	var subs []cgroup1.Subsystem
	for c := range g.v1 {
		// The library finds a controller at its name under root.
		root := filepath.Dir(h.v1mount[c])
		switch c {
		case "memory":
			subs = append(subs, cgroup1.NewMemory(root, cgroup1.OptionalSwap()))
			if l.MemoryMax > 0 {
				v := int64(l.MemoryMax)
				res.Memory = &specs.LinuxMemory{Limit: &v}
			}
		case "pids":
			subs = append(subs, cgroup1.NewPids(root))
			if l.PidsMax > 0 {
				v := l.PidsMax
				res.Pids = &specs.LinuxPids{Limit: &v}
			}
		case "cpu":
			subs = append(subs, cgroup1.NewCpu(root))
			res.CPU = &specs.LinuxCPU{}
			if l.CPUWeight > 0 {
				// cgroup v2's weight 1..10000 as v1's shares 2..262144.
				s := uint64(2 + (l.CPUWeight-1)*262142/9999)
				res.CPU.Shares = &s
			}
			if p := l.CPUPercent(); p > 0 {
				q := int64(math.Ceil(p / 100 * cpuPeriod))
				per := uint64(cpuPeriod)
				res.CPU.Quota, res.CPU.Period = &q, &per
			}
		}
	}
	path := func(name cgroup1.Name) (string, error) {
		dir, ok := g.v1[string(name)]
		if !ok {
			return "", fmt.Errorf("no v1 %s cgroup", name)
		}
		return "/" + strings.TrimPrefix(strings.TrimPrefix(dir, h.v1mount[string(name)]), "/"), nil
	}
	_, err := cgroup1.New(path, res, cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) { return subs, nil }))
	return err
}

// Open finds the cgroup a session's record names again, after a daemon
// restart; false when it is gone.
func (h *Host) Open(rec *ipc.Cgroup) (*Group, bool) {
	if rec == nil || rec.Path == "" || !isDir(rec.Path) {
		return nil, false
	}
	g := &Group{mount: h.mount, dir: rec.Path, v1: map[string]string{}}
	for c, dir := range rec.V1 {
		if isDir(dir) {
			g.v1[c] = dir
		}
	}
	g.memory = memoryWhere(fileExists(filepath.Join(g.dir, "memory.current")), g.v1["memory"] != "")
	return g, true
}

// Attach is the group rec names, for a process other than the daemon that
// starts a session's command in it (a terminal holder).
func Attach(rec *ipc.Cgroup) (*Group, error) {
	if rec == nil || rec.Path == "" {
		return nil, errors.New("no cgroup named")
	}
	m, err := readMounts()
	if err != nil {
		return nil, err
	}
	if m.v2 == "" || !strings.HasPrefix(rec.Path, m.v2+"/") || !isDir(rec.Path) {
		return nil, fmt.Errorf("%s is not a cgroup of this host", rec.Path)
	}
	g := &Group{mount: m.v2, dir: rec.Path, v1: map[string]string{}}
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
// without it, freeze, SIGKILL each, thaw).
func (g *Group) Kill() error { return g.kill(g.dir) }

// KillLeaf ends every process in one leaf of the group.
func (g *Group) KillLeaf(leaf string) error {
	dir := filepath.Join(g.dir, leaf)
	if !isDir(dir) {
		return nil
	}
	return g.kill(dir)
}

func (g *Group) kill(dir string) error {
	if !isDir(dir) {
		return nil
	}
	rel, err := filepath.Rel(g.mount, dir)
	if err != nil {
		return err
	}
	m, err := cgroup2.Load("/"+rel, cgroup2.WithMountpoint(g.mount))
	if err != nil {
		return err
	}
	if err := m.Kill(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("kill the cgroup %s: %w", dir, err)
	}
	return nil
}

// Populated reports whether any process is in the group (or leaf).
func (g *Group) Populated(leaf string) bool {
	dir := filepath.Join(g.dir, leaf)
	for line := range strings.Lines(readString(filepath.Join(dir, "cgroup.events"))) {
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
		for _, f := range strings.Fields(readString(filepath.Join(d, "cgroup.procs"))) {
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
	for line := range strings.Lines(readString(filepath.Join(g.dir, "memory.pressure"))) {
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
	n, _ := strconv.ParseInt(readString(p), 10, 64)
	return n
}

// readKey reads the value of key in a flat-keyed file ("key value" lines).
func readKey(p, key string) int64 {
	for line := range strings.Lines(readString(p)) {
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
