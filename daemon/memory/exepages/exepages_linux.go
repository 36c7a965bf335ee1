package exepages

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Drop drops the resident read-only pages of the running executable and
// returns how many bytes of mappings it went over.
func Drop() (int64, error) {
	// The list is read whole before the first drop: the reading's own
	// code is then faulted back once, not once a line.
	ranges, err := readOnlyRanges()
	if err != nil {
		return 0, err
	}
	// Whatever code runs after a drop is faulted back, and the kernel maps
	// up to 16 of a faulting page's neighbours along with it (fault-around):
	// so the code goes last (the mappings are listed in address order, the
	// code first), and the calls are raw ones, without the scheduler's
	// system call entry and exit, which would be faulted back too.
	var n int64
	for i := len(ranges) - 1; i >= 0; i-- {
		r := ranges[i]
		if _, _, e := unix.RawSyscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_DONTNEED); e != 0 {
			return n, e
		}
		n += int64(r[1] - r[0])
	}
	return n, nil
}

// readOnlyRanges lists the mappings of the running executable that are
// not writable, from /proc/self/maps: the process's own, nothing a user
// names. The executable is known by its inode and device: its path may
// have been replaced by an upgrade since it started.
func readOnlyRanges() ([][2]uintptr, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ranges [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if lo, hi, ok := readOnlyOf(sc.Text(), st.Ino, st.Dev); ok {
			ranges = append(ranges, [2]uintptr{lo, hi})
		}
	}
	return ranges, sc.Err()
}

// readOnlyOf parses a line of /proc/self/maps ("start-end perms offset
// dev inode path") and returns the range of a mapping of the file ino on
// dev that is not writable.
func readOnlyOf(line string, ino, dev uint64) (lo, hi uintptr, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || len(fields[1]) < 2 || fields[1][1] != '-' || fields[4] != strconv.FormatUint(ino, 10) || !sameDev(fields[3], dev) {
		return 0, 0, false
	}
	a, b, found := strings.Cut(fields[0], "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseUint(a, 16, 64)
	end, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return 0, 0, false
	}
	return uintptr(start), uintptr(end), true
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
