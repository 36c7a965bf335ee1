package checkpoint

import "syscall"

// statCtime is a file's status change time in nanoseconds.
func statCtime(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }
