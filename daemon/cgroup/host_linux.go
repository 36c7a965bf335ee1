package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/cgroup/cgroupfs"
	"github.com/sessiond/sessiond/ipc"
)

// supervisorLeaf is the daemon's own leaf in a cgroup it was given whole
// (a delegated subtree, a scope): cgroup v2 lets a cgroup with processes
// of its own give no controller to its children.
const supervisorLeaf = "supervisor"

// Host is what this host offers to contain sessions, found once when the
// daemon starts (Detect).
type Host struct {
	info ipc.Containment
	// mount is the cgroup v2 mount; base the directory (under it) the
	// sessions' cgroups are made in.
	mount, base string
	// v2 are the controllers the sessions' cgroups have in v2; v1 the
	// directory, per controller, of a v1 hierarchy that has it instead.
	v2 map[string]bool
	v1 map[string]string
	// v1mount is the mount of the v1 hierarchy of each controller in v1.
	v1mount map[string]string
	// probe: only look (Options.Probe).
	probe bool
}

// Detect finds what the host offers and prepares the cgroup the sessions'
// cgroups go in. It never fails: what it cannot have, the Host says.
func Detect(opt Options) *Host {
	h := &Host{v2: map[string]bool{}, v1: map[string]string{}, v1mount: map[string]string{}, probe: opt.Probe}
	h.info = ipc.Containment{Mode: None}
	if opt.Off {
		h.info.Why = "containment is turned off in the daemon's configuration (cgroups = false)"
		return h
	}
	mounts, err := cgroupfs.ReadMounts()
	if err != nil {
		h.info.Why = "cannot read /proc/self/mountinfo: " + err.Error()
		return h
	}
	h.mount = mounts.V2
	if h.mount == "" {
		h.info.Why = "no cgroup v2 hierarchy is mounted"
		h.info.Fix = "boot with a cgroup v2 hierarchy (systemd.unified_cgroup_hierarchy=1, or mount -t cgroup2 none /sys/fs/cgroup/unified)"
		return h
	}
	own, err := cgroup2.PidGroupPath(os.Getpid())
	if err != nil {
		h.info.Why = "cannot read the daemon's own cgroup: " + err.Error()
		return h
	}
	systemd := isDir("/run/systemd/system")
	switch {
	case systemd && (delegated(filepath.Join(h.mount, own)) || ownUnit(own)):
		h.info.Mode = Delegated
		h.info.Why = "systemd delegates " + own + " to the daemon's unit"
		err = h.takeWhole(own)
	case systemd:
		var scope string
		if opt.Probe {
			if err = reachSystemd(); err == nil {
				h.info.Mode = Scope
				h.info.Why = "a transient scope of the systemd manager would be asked for over D-Bus"
				h.base = filepath.Join(h.mount, own)
			}
		} else if scope, err = startScope(opt.Name); err == nil {
			if own, err = cgroup2.PidGroupPath(os.Getpid()); err == nil {
				h.info.Mode = Scope
				h.info.Why = "a transient scope of the systemd manager, " + scope
				err = h.takeWhole(own)
			}
		}
		if err != nil {
			h.info.Why = fmt.Sprintf("the daemon's cgroup %s is systemd's and not delegated to it, and no transient scope could be had (%v)", own, err)
			h.info.Fix = "run sessiond as its service (sessiond install; its unit has Delegate=yes), or under systemd-run --user --scope -p Delegate=yes"
			return h
		}
	default:
		h.info.Mode = Cgroupfs
		h.info.Why = "a writable cgroupfs at " + h.mount + ", no systemd"
		err = h.makeBase(own, opt.Name)
	}
	if err != nil {
		why := h.info.Why + ", but " + err.Error()
		if h.info.Mode == Cgroupfs {
			why = fmt.Sprintf("no systemd, and the cgroupfs at %s is not the daemon's to write (%v)", h.mount, err)
		}
		h.info = ipc.Containment{Mode: None, Why: why, Fix: "run the daemon as root, or give it a delegated cgroup (a systemd unit with Delegate=yes, a container with a cgroup namespace of its own)"}
		return h
	}
	h.info.Path = h.base
	h.controllers(mounts, opt.Name)
	return h
}

// takeWhole makes own, a cgroup given to the daemon whole, the base: the
// daemon moves into a leaf of its own, so that own's children may have
// controllers.
func (h *Host) takeWhole(own string) error {
	dir := filepath.Join(h.mount, own)
	if h.probe {
		h.base = dir
		if unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) != nil {
			return fmt.Errorf("%s is not the daemon's to write", dir)
		}
		return nil
	}
	leaf := filepath.Join(dir, supervisorLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cannot make %s: %w", leaf, err)
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(fmt.Sprint(os.Getpid())), 0); err != nil {
		return fmt.Errorf("cannot move the daemon into %s: %w", leaf, err)
	}
	h.base = dir
	return nil
}

// makeBase makes the base in a cgroupfs the daemon may write: a cgroup
// named for this daemon beside (under) its own.
func (h *Host) makeBase(own, name string) error {
	dir := filepath.Join(h.mount, own, name)
	if h.probe {
		h.base = dir
		if unix.Access(filepath.Join(h.mount, own), unix.W_OK) != nil {
			return fmt.Errorf("%s is not the daemon's to write", filepath.Join(h.mount, own))
		}
		return nil
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cannot make %s: %w", dir, err)
	}
	if unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) != nil {
		return fmt.Errorf("%s is not the daemon's to write", dir)
	}
	h.base = dir
	return nil
}

// controllers settles where each controller of Controllers comes from:
// the v2 hierarchy where the base's parent can give it, else a v1
// hierarchy that has it.
func (h *Host) controllers(m cgroupfs.Mounts, name string) {
	dirs := []string{h.base}
	if h.info.Mode == Cgroupfs {
		// The base's parent is the daemon's own cgroup: it gives the base
		// what it has if it is the root or holds no process.
		dirs = []string{filepath.Dir(h.base), h.base}
	}
	var enabled []string
	if h.probe {
		// What the base could be given: what its parent has.
		enabled = strings.Fields(cgroupfs.ReadString(filepath.Join(dirs[0], "cgroup.controllers")))
	} else {
		for _, dir := range dirs {
			avail := strings.Fields(cgroupfs.ReadString(filepath.Join(dir, "cgroup.controllers")))
			for _, c := range Controllers {
				// Each controller alone: one refused (a threaded
				// subtree, say) leaves the others.
				if slices.Contains(avail, c) {
					_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0)
				}
			}
		}
		enabled = strings.Fields(cgroupfs.ReadString(filepath.Join(h.base, "cgroup.subtree_control")))
	}
	h.info.Controllers = map[string]string{}
	var missing []string
	for _, c := range Controllers {
		switch {
		case slices.Contains(enabled, c):
			h.v2[c] = true
			h.info.Controllers[c] = "v2"
		case m.V1[c] != "":
			if dir, err := v1Base(m.V1[c], c, name, h.probe); err == nil {
				h.v1[c], h.v1mount[c] = dir, m.V1[c]
				h.info.Controllers[c] = "v1"
				continue
			}
			fallthrough
		default:
			h.info.Controllers[c] = ""
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 && h.info.Fix == "" {
		h.info.Fix = fmt.Sprintf("the %s controller(s) are not delegated to %s: ", strings.Join(missing, ", "), h.base)
		if h.info.Mode == Cgroupfs {
			h.info.Fix += "enable them in the cgroup.subtree_control of every cgroup above it"
		} else {
			h.info.Fix += "delegate them to the user manager (a drop-in /etc/systemd/system/user@.service.d/delegate.conf with [Service] Delegate=memory pids cpu, then systemctl daemon-reload)"
		}
	}
}

// v1Base makes the daemon's cgroup in a v1 hierarchy mounted at mount:
// under the daemon's own cgroup there, named as in v2.
func v1Base(mount, controller, name string, probe bool) (string, error) {
	own, err := v1Own(controller)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(mount, own, name)
	if probe {
		return dir, unix.Access(filepath.Join(mount, own), unix.W_OK)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return dir, unix.Access(filepath.Join(dir, "tasks"), unix.W_OK)
}

// v1Own is the daemon's cgroup in the v1 hierarchy that has controller.
func v1Own(controller string) (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), controller) {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("the daemon is in no %s cgroup", controller)
}

// Hierarchies are the cgroup hierarchies mounted: the v2 one ("" for
// none) and the v1 ones of the limits' controllers.
func Hierarchies() (v2 string, v1 map[string]string) {
	m, err := cgroupfs.ReadMounts()
	if err != nil {
		return "", nil
	}
	return m.V2, m.V1
}

// Fit checks limits l against what the host gives: an error (wrapping
// ErrLimit) for a limit it cannot apply, unless l is best-effort; then
// notices say what would be left out.
func (h *Host) Fit(l config.Limits) ([]string, error) {
	if !h.Enabled() {
		if l.Any() && !l.BestEffort() {
			return nil, fmt.Errorf("%w: this host gives sessiond no cgroup (%s); %s", ErrLimit, h.info.Why, limitsHint)
		}
		if l.Any() {
			return []string{"limits not applied: this host gives sessiond no cgroup (" + h.info.Why + ")"}, nil
		}
		return nil, nil
	}
	_, notices, err := h.fit(l)
	return notices, err
}

// Info says what the host offers and what the daemon does with it.
func (h *Host) Info() ipc.Containment {
	c := h.info
	c.Controllers = make(map[string]string, len(h.info.Controllers))
	for k, v := range h.info.Controllers {
		c.Controllers[k] = v
	}
	return c
}

// Close removes the cgroups the daemon made where no session runs any
// more (a cgroup with sessions in it stays: it is not empty): its base in
// a cgroupfs, and in every mode the cgroups of the v1 hierarchies (a
// systemd unit's cgroup, the base of the other modes, is systemd's).
func (h *Host) Close() {
	if h.probe {
		return
	}
	if h.info.Mode == Cgroupfs {
		_ = unix.Rmdir(h.base)
	}
	for _, d := range h.v1 {
		_ = unix.Rmdir(d)
	}
}

// Enabled reports whether sessions get cgroups.
func (h *Host) Enabled() bool { return h != nil && h.info.Mode != None }

// Sweep kills and removes the cgroups of the base that belong to no live
// session (live says which ids are): what a session left behind when a
// daemon died during its start or its end. It returns the ids swept.
func (h *Host) Sweep(ctx context.Context, live func(id string) bool) []string {
	if !h.Enabled() {
		return nil
	}
	// The v1 cgroups too: a daemon may have died between the removal of
	// a session's v2 cgroup and of its v1 ones.
	seen := map[string]bool{}
	var ids []string
	for _, dir := range append([]string{h.base}, mapValues(h.v1)...) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if id := e.Name(); e.IsDir() && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	var swept []string
	for _, id := range ids {
		if id == supervisorLeaf || id == LeafCommand || id == LeafSidecars || live(id) {
			continue
		}
		g := h.group(id)
		_ = g.Kill()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = g.Wait(wctx)
		cancel()
		_ = g.Remove()
		swept = append(swept, id)
	}
	return swept
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// delegated reports whether systemd delegates the cgroup at dir: it marks
// such cgroups with a trusted.delegate (system manager) or user.delegate
// (user manager) attribute.
func delegated(dir string) bool {
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		buf := make([]byte, 8)
		if n, err := unix.Getxattr(dir, attr, buf); err == nil && string(buf[:n]) == "1" {
			return true
		}
	}
	return false
}

// ownUnit reports whether the daemon runs as sessiond's own systemd unit,
// whose Delegate=yes a systemd too old to mark delegated cgroups (before
// v251) does not say.
func ownUnit(own string) bool {
	return os.Getenv("INVOCATION_ID") != "" && filepath.Base(own) == "sessiond.service"
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
