//go:build !linux

package cgroupfs

import (
	"context"
	"errors"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// Group is a session's cgroup; there are none here.
type Group struct{}

// NewGroup is a group of nothing: there are no cgroups here.
func NewGroup(string, string, map[string]string, string) *Group { return &Group{} }

// Open finds no cgroup.
func Open(string, *ipc.Cgroup) (*Group, bool) { return nil, false }

// Attach finds no cgroup.
func Attach(*ipc.Cgroup) (*Group, error) { return nil, errors.New("no cgroups on this platform") }

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
