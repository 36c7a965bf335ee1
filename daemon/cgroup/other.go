//go:build !linux

package cgroup

import (
	"context"
	"fmt"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/cgroup/cgroupfs"
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

// Hierarchies finds none off Linux.
func Hierarchies() (string, map[string]string) { return "", nil }

// Fit is New without a group.
func (h *Host) Fit(l config.Limits) ([]string, error) {
	_, n, err := h.New("", l)
	return n, err
}

// Open finds no cgroup.
func (h *Host) Open(rec *ipc.Cgroup) (*Group, bool) { return cgroupfs.Open("", rec) }

// Sweep has nothing to sweep.
func (h *Host) Sweep(context.Context, func(string) bool) []string { return nil }
