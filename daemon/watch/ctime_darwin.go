package watch

import (
	"io/fs"
	"syscall"
	"time"
)

// statusChangeTime is a file's ctime, or the zero time when unknown.
func statusChangeTime(info fs.FileInfo) time.Time {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctimespec.Unix())
	}
	return time.Time{}
}
