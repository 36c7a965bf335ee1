// Package cgroupfs is a session's cgroup as the kernel shows it: a
// directory of the v2 hierarchy (and one in each v1 hierarchy that holds
// a controller v2 lacks) where a process is started, counted, accounted,
// killed and waited for, through the cgroupfs's own files.
//
// Making a session's cgroup, with its limits, is package cgroup's, which
// links the libraries that takes. This package links nothing beyond the
// standard library, x/sys and ipc, so that the programs that only start
// processes in a session's cgroup (the terminal holder, the log keeper)
// carry none of them: their package initialisers alone kept half a
// megabyte in each such process for as long as it lived.
//
// The cgroupfs is the daemon's: none of these paths is one a user can
// influence, so none goes through package state.
package cgroupfs
