package logfile

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// collapse removes [off, off+n) from f and shifts the rest down, without
// moving data through user space. An O_APPEND writer sharing the file does
// not notice: its next write lands at the new end.
func collapse(f *os.File, off, n int64) error {
	return fallocate(f, unix.FALLOC_FL_COLLAPSE_RANGE, off, n)
}

// punch frees the blocks of [off, off+n) in f; the range reads as zeros
// and the file keeps its size.
func punch(f *os.File, off, n int64) error {
	return fallocate(f, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}

func fallocate(f *os.File, mode uint32, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), mode, off, n)
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// unsupported reports an error that means "this filesystem (or this file)
// cannot do that operation", as opposed to a failure worth retrying.
func unsupported(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) ||
		errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOTTY)
}

// blockSize is the allocation unit of the filesystem holding f: the
// alignment COLLAPSE_RANGE needs and the granularity of punched holes.
func blockSize(f *os.File) int64 {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil || st.Bsize <= 0 {
		return 4096
	}
	return st.Bsize
}

// dataStart returns the offset of the first data (not hole) byte of f, or
// size when f holds no data at all.
func dataStart(f *os.File, size int64) int64 {
	off, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA)
	if err != nil || off > size {
		if errors.Is(err, unix.ENXIO) {
			return size
		}
		return 0
	}
	return off
}

// settledSize returns the size of f once a write in progress has ended,
// at least from: SEEK_HOLE takes the inode lock on tmpfs, ext4, XFS and
// btrfs, which a write holds throughout, while fstat can see a write half
// done. Past the end, or where SEEK_HOLE fails, it is fstat's size.
func settledSize(f *os.File, from int64) (int64, error) {
	off, err := unix.Seek(int(f.Fd()), from, unix.SEEK_HOLE)
	if err == nil {
		return off, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// diskBytes is the space f's blocks take on disk.
func diskBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

// copyRange appends n bytes of src from offset off to dst, inside the kernel
// (copy_file_range) where the filesystem allows it, else through buf. It
// returns the bytes copied, fewer than n only at src's end.
func copyRange(dst, src *os.File, off, n int64) (int64, error) {
	var done int64
	for done < n {
		srcOff := off + done
		c, err := unix.CopyFileRange(int(src.Fd()), &srcOff, int(dst.Fd()), nil, int(min(n-done, 1<<30)), 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if done == 0 && (unsupported(err) || errors.Is(err, unix.EXDEV)) {
				return copyBuffered(dst, src, off, n)
			}
			return done, &os.PathError{Op: "copy_file_range", Path: src.Name(), Err: err}
		}
		if c == 0 {
			break
		}
		done += int64(c)
	}
	return done, nil
}
