//go:build !linux

package logfile

import (
	"errors"
	"os"
	"syscall"
)

var errNoFallocate = errors.New("fallocate is not available on this system")

func collapse(f *os.File, off, n int64) error { return errNoFallocate }

func punch(f *os.File, off, n int64) error { return errNoFallocate }

func unsupported(err error) bool { return errors.Is(err, errNoFallocate) }

func blockSize(f *os.File) int64 { return 4096 }

func dataStart(f *os.File, size int64) int64 { return 0 }

func settledSize(f *os.File, from int64) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func diskBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

func copyRange(dst, src *os.File, off, n int64) (int64, error) {
	return copyBuffered(dst, src, off, n)
}
