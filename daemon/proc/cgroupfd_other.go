//go:build !linux

package proc

import "syscall"

// intoCgroup does nothing where there are no cgroups.
func intoCgroup(*syscall.SysProcAttr, int) {}
