package cgroup

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/cgroup/cgroupfs"
	"github.com/sessiond/sessiond/ipc"
)

// cpuPeriod is the period cpu_max's quota is given in, in microseconds.
const cpuPeriod = 100000

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
	dir, v1 := h.dirs(id)
	// A v1 cgroup only for a limit that needs it: a process enters one
	// only by a migration (its forking thread's, here), which costs a
	// grace period of the kernel's (10-25 ms a start on this kind of
	// host), where a v2 cgroup is entered at birth for nothing.
	if l.MemoryMax == 0 {
		delete(v1, "memory")
	}
	if l.PidsMax == 0 {
		delete(v1, "pids")
	}
	if l.CPUWeight == 0 && l.CPUPercent() == 0 {
		delete(v1, "cpu")
	}
	g = cgroupfs.NewGroup(h.mount, dir, v1, memoryWhere(h.v2["memory"], v1["memory"] != ""))
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
	for _, d := range []string{dir, filepath.Join(dir, LeafCommand)} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EAGAIN) {
				err = fmt.Errorf("%w (the cgroup subtree is full: cgroup.max.descendants of %s)", err, filepath.Dir(dir))
			}
			_ = g.Remove()
			return nil, nil, fmt.Errorf("make the session's cgroup %s: %w", dir, err)
		}
	}
	if len(res.Values()) > 0 {
		rel, err := filepath.Rel(h.mount, dir)
		if err == nil {
			var m *cgroup2.Manager
			if m, err = cgroup2.Load("/"+rel, cgroup2.WithMountpoint(h.mount)); err == nil {
				err = m.Update(res)
			}
		}
		if err != nil {
			_ = g.Remove()
			return nil, nil, fmt.Errorf("set the limits of the session's cgroup %s: %w", dir, err)
		}
	}
	if len(v1) > 0 {
		if err := h.newV1(v1, l); err != nil {
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

// dirs are the directories of session id's cgroup, made or not: the v2
// one, and the v1 ones by controller.
func (h *Host) dirs(id string) (string, map[string]string) {
	v1 := make(map[string]string, len(h.v1))
	for c, dir := range h.v1 {
		v1[c] = filepath.Join(dir, id)
	}
	return filepath.Join(h.base, id), v1
}

// group is session id's cgroup, made or not.
func (h *Host) group(id string) *Group {
	dir, v1 := h.dirs(id)
	return cgroupfs.NewGroup(h.mount, dir, v1, memoryWhere(h.v2["memory"], v1["memory"] != ""))
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

// newV1 makes a group's v1 cgroups (their directories by controller)
// with the limits that go there.
func (h *Host) newV1(v1 map[string]string, l config.Limits) error {
	res := &specs.LinuxResources{}
	var subs []cgroup1.Subsystem
	for c := range v1 {
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
		dir, ok := v1[string(name)]
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
func (h *Host) Open(rec *ipc.Cgroup) (*Group, bool) { return cgroupfs.Open(h.mount, rec) }
