package term

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseMemory gives back what a quiet holder does not need: free heap
// pages, and the pages of the executable's code and read-only data that
// start-up touched. The sessiond binary carries the whole daemon (zap,
// cobra, the HTTP server); their package initialisation and the flag
// parsing fault in megabytes of it, which a holder never runs again. Those
// are clean file pages, shared with every other sessiond process through
// the page cache: dropping them from this process's page tables frees
// nothing for the others and costs only a minor fault for a page that is
// used again. Writable mappings are never touched.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
	// The executable is known by its inode: its path may have been
	// replaced by an upgrade since it started.
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return
	}
	ino := strconv.FormatUint(st.Ino, 10)
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[4] != ino || !sameDev(fields[3], st.Dev) || strings.ContainsRune(fields[1], 'w') {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
}

// sameDev compares a maps device field ("fe:01", hexadecimal major:minor)
// with a stat device number.
func sameDev(field string, dev uint64) bool {
	maj, mnr, ok := strings.Cut(field, ":")
	if !ok {
		return false
	}
	a, err1 := strconv.ParseUint(maj, 16, 32)
	b, err2 := strconv.ParseUint(mnr, 16, 32)
	return err1 == nil && err2 == nil && uint32(a) == unix.Major(dev) && uint32(b) == unix.Minor(dev)
}
