//go:build !linux

package cgroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

// Host is what this host offers to contain sessions: nothing, off Linux.
type Host struct{ info ipc.Containment }

// Detect finds that this platform has no cgroups.
func Detect(Options) *Host {
	return &Host{info: ipc.Containment{Mode: None, Why: "cgroups are Linux's; here sessions are contained by process group"}}
}

// Info says what the host offers.
func (h *Host) Info() ipc.Containment { return h.info }

// Close has nothing to remove.
func (h *Host) Close() {}

// Enabled reports whether sessions get cgroups: never here.
func (h *Host) Enabled() bool { return false }

// New refuses limits, which need cgroups, unless they are best-effort.
func (h *Host) New(id string, l config.Limits) (*Group, []string, error) {
	if !l.Any() {
		return nil, nil, nil
	}
	if l.BestEffort() {
		return nil, []string{"limits not applied: " + h.info.Why}, nil
	}
	return nil, nil, fmt.Errorf("%w: %s", ErrLimit, h.info.Why)
}

// Attach finds no cgroup.
func Attach(*ipc.Cgroup) (*Group, error) { return nil, errors.New("no cgroups on this platform") }

// Hierarchies finds none off Linux.
func Hierarchies() (string, map[string]string) { return "", nil }

// Fit is New without a group.
func (h *Host) Fit(l config.Limits) ([]string, error) {
	_, n, err := h.New("", l)
	return n, err
}

// Open finds no cgroup.
func (h *Host) Open(*ipc.Cgroup) (*Group, bool) { return nil, false }

// Sweep has nothing to sweep.
func (h *Host) Sweep(context.Context, func(string) bool) []string { return nil }

// Group is a session's cgroup; there are none here.
type Group struct{}

func (g *Group) Record() *ipc.Cgroup                         { return nil }
func (g *Group) Dir() string                                 { return "" }
func (g *Group) Start(_ string, start func(int) error) error { return start(-1) }
func (g *Group) EntersByThread() bool                        { return false }
func (g *Group) Kill() error                                 { return nil }
func (g *Group) KillLeaf(string) error                       { return nil }
func (g *Group) Populated(string) bool                       { return false }
func (g *Group) Procs(string) []int                          { return nil }
func (g *Group) Wait(context.Context, ...string) error       { return nil }
func (g *Group) Remove() error                               { return nil }
func (g *Group) Memory() (ipc.Memory, bool)                  { return ipc.Memory{}, false }
func (g *Group) MemoryNow() (int64, bool)                    { return 0, false }
func (g *Group) MemoryAccounted() bool                       { return false }
func (g *Group) CPU() time.Duration                          { return 0 }
func (g *Group) Pressure() (avg10 float64, highEvents int64) { return 0, 0 }
