package proc

import (
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/sessiond/sessiond/daemon/cgroup/cgroupfs"
)

// helpers is the set of pids of short-lived helper commands (git, hooks) that
// the daemon starts through os/exec and waits for itself. The reaper leaves
// them alone, so that exec.Cmd.Wait still finds its child to reap.
var helpers = struct {
	// mu is held for reading while a helper is forked and registered, and for
	// writing while the reaper looks for zombies, so that the reaper never sees
	// a helper that is not yet registered.
	mu sync.RWMutex
	// pidsMu guards pids, which concurrent Starts write under mu's read lock.
	pidsMu sync.Mutex
	// pids are the helpers running, each with the session its environment
	// names ("" for none).
	pids map[int]string
}{pids: make(map[int]string)}

// Start starts cmd like cmd.Start, registered so that the daemon's reaper does
// not take its exit status away from cmd.Wait. Every command the daemon runs
// outside a session goes through Start (and Wait) or Run.
func Start(cmd *exec.Cmd) error {
	helpers.mu.RLock()
	defer helpers.mu.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	sid := envSessionOf(cmd.Environ())
	helpers.pidsMu.Lock()
	helpers.pids[cmd.Process.Pid] = sid
	helpers.pidsMu.Unlock()
	return nil
}

// envSessionOf is the SESSIOND_SESSION_ID in env, the last of them as
// exec keeps it ("" when none).
func envSessionOf(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if id, ok := strings.CutPrefix(env[i], "SESSIOND_SESSION_ID="); ok {
			return id
		}
	}
	return ""
}

// Wait waits for a command started with Start and unregisters it.
func Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	helpers.pidsMu.Lock()
	delete(helpers.pids, cmd.Process.Pid)
	helpers.pidsMu.Unlock()
	return err
}

// RunIn is Run with cmd born in the leaf of a session's cgroup (g nil:
// Run). cmd.SysProcAttr, if set, is kept.
func RunIn(g *cgroupfs.Group, leaf string, cmd *exec.Cmd) error {
	if g == nil {
		return Run(cmd)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if err := InCgroup(g, leaf, cmd.SysProcAttr, func() error { return Start(cmd) }); err != nil {
		return err
	}
	return Wait(cmd)
}

// InCgroup runs start, which forks with attr, so that the child is born in
// the leaf of g (cgroupfs.LeafCommand when empty); g nil runs start alone.
func InCgroup(g *cgroupfs.Group, leaf string, attr *syscall.SysProcAttr, start func() error) error {
	if g == nil {
		return start()
	}
	if leaf == "" {
		leaf = cgroupfs.LeafCommand
	}
	return g.Start(leaf, func(fd int) error {
		intoCgroup(attr, fd)
		return start()
	})
}

// Run is Start followed by Wait.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return Wait(cmd)
}

func isHelper(pid int) bool {
	helpers.pidsMu.Lock()
	defer helpers.pidsMu.Unlock()
	_, ok := helpers.pids[pid]
	return ok
}
