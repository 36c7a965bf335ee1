package exepages

import (
	_ "embed"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// blob is read-only data of the executable that nothing but the test reads.
//
//go:embed testdata/pages.txt
var blob string

// kept is initialised data: it lives in a writable mapping of the
// executable, which Drop must leave alone once the process wrote to it.
var kept = [8192]byte{0: 1, 4096: 2}

// TestDropLeavesOnlyWhatIsUsedAgain maps every page of the test binary's
// read-only mappings and drops them: Drop goes over all of them,
// the pages of data nothing uses again are no longer mapped in the
// process, and the data it wrote to its writable mappings is what it
// wrote.
func TestDropLeavesOnlyWhatIsUsedAgain(t *testing.T) {
	kept[100], kept[5000] = 42, 43
	ranges, err := readOnlyRanges()
	if err != nil {
		t.Fatal(err)
	}
	if len(ranges) == 0 {
		t.Fatal("no read-only mapping of the executable found")
	}
	// Every page of them mapped, as a process that ran all its code has.
	var total uintptr
	for _, r := range ranges {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_POPULATE_READ); e != 0 {
			t.Fatalf("madvise(MADV_POPULATE_READ) of [%#x, %#x): %v", r[0], r[1], e)
		}
		total += r[1] - r[0]
	}
	// The embedded file's whole pages: in a read-only mapping, and
	// touched by nobody after this.
	lo := (uintptr(unsafe.Pointer(unsafe.StringData(blob))) + 4095) &^ 4095
	hi := (uintptr(unsafe.Pointer(unsafe.StringData(blob))) + uintptr(len(blob))) &^ 4095
	inRange := false
	for _, r := range ranges {
		inRange = inRange || (lo >= r[0] && hi <= r[1])
	}
	if !inRange || hi-lo < 64<<12 {
		t.Fatalf("the embedded file [%#x, %#x) is not in a read-only mapping of at least 64 pages", lo, hi)
	}
	area := [][2]uintptr{{lo, hi}}
	buf := make([]byte, 8*((hi-lo)>>12))
	pages := int((hi - lo) >> 12)
	before := present(t, area, buf)
	n, err := Drop()
	if err != nil {
		t.Fatal(err)
	}
	after := present(t, area, buf)
	t.Logf("read-only mappings %d KiB, dropped %d KiB; of the embedded file's %d pages, %d mapped before, %d after", total>>10, n>>10, pages, before, after)
	if n != int64(total) {
		t.Errorf("Drop went over %d bytes, the read-only mappings are %d", n, total)
	}
	if before != pages {
		t.Fatalf("%d of %d pages mapped after they were populated: the count is wrong", before, pages)
	}
	// A fault maps a few pages around it: a neighbour's use may bring
	// back the edges.
	if after > pages/4 {
		t.Errorf("%d of %d pages still mapped after Drop", after, pages)
	}
	if kept[0] != 1 || kept[4096] != 2 || kept[100] != 42 || kept[5000] != 43 {
		t.Errorf("the executable's writable data changed under Drop: %d %d %d %d", kept[0], kept[4096], kept[100], kept[5000])
	}
}

func TestReadOnlyOf(t *testing.T) {
	const ino, dev = 1234, 0xfe01 // major 0xfe... as unix.Mkdev(254, 1)
	d := unix.Mkdev(254, 1)
	for _, c := range []struct {
		line   string
		ok     bool
		lo, hi uintptr
	}{
		{"00400000-00b56000 r-xp 00000000 fe:01 1234 /usr/bin/sessiond", true, 0x400000, 0xb56000},
		{"00b56000-0133a000 r--p 00756000 fe:01 1234 /usr/bin/sessiond", true, 0xb56000, 0x133a000},
		{"0133a000-013c3000 rw-p 00f3a000 fe:01 1234 /usr/bin/sessiond", false, 0, 0},
		{"00400000-00b56000 r-xp 00000000 fe:01 999 /usr/bin/other", false, 0, 0},
		{"00400000-00b56000 r-xp 00000000 fe:02 1234 /other/fs", false, 0, 0},
		{"013c3000-0362e000 rw-p 00000000 00:00 0", false, 0, 0},
		{"00b56000-00400000 r--p 00000000 fe:01 1234 /backwards", false, 0, 0},
		{"zz-00400000 r--p 00000000 fe:01 1234 /bad", false, 0, 0},
		{"garbage", false, 0, 0},
		{"", false, 0, 0},
	} {
		lo, hi, ok := readOnlyOf(c.line, ino, d)
		if ok != c.ok || lo != c.lo || hi != c.hi {
			t.Errorf("readOnlyOf(%q) = %#x, %#x, %v; want %#x, %#x, %v", c.line, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
	_ = dev
}

// present counts the pages of ranges mapped in this process
// (/proc/self/pagemap, bit 63), reading with bare system calls into buf
// so as to fault in little code of its own.
func present(t *testing.T, ranges [][2]uintptr, buf []byte) int {
	t.Helper()
	fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	n := 0
	for _, r := range ranges {
		b := buf[:8*((r[1]-r[0])>>12)]
		if got, err := unix.Pread(fd, b, int64(8*(r[0]>>12))); err != nil || got != len(b) {
			t.Fatalf("pagemap: read %d of %d bytes: %v", got, len(b), err)
		}
		for i := 0; i < len(b); i += 8 {
			if b[i+7]&0x80 != 0 {
				n++
			}
		}
	}
	return n
}
