// Package cgroup contains each session in a control group of its own: the
// host's offer found once (Detect: a subtree systemd delegates, a
// transient scope of the user manager, a writable cgroupfs, or nothing),
// a group made before the session's first process starts (each process
// is born inside it, with clone3's CLONE_INTO_CGROUP and, for controllers
// only a v1 hierarchy has, from a thread that entered them first), its
// limits, its account (memory in use, its peak, OOM kills, pressure), and
// its end: cgroup.kill, then a wait until it is empty.
//
// The cgroupfs is the daemon's: none of these paths is one a user can
// influence, so none goes through package state.
package cgroup
