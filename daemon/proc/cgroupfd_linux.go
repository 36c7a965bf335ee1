package proc

import "syscall"

// intoCgroup has a process forked with attr born in the cgroup whose
// directory fd is (clone3 with CLONE_INTO_CGROUP).
func intoCgroup(attr *syscall.SysProcAttr, fd int) {
	attr.UseCgroupFD, attr.CgroupFD = true, fd
}
