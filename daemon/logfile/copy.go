package logfile

import (
	"errors"
	"io"
	"os"
)

// copyBuffered appends n bytes of src from offset off to dst through buf,
// for filesystems that cannot copy inside the kernel.
func copyBuffered(dst, src *os.File, off, n int64, buf []byte) (int64, error) {
	var done int64
	for done < n {
		m, err := src.ReadAt(buf[:min(n-done, int64(len(buf)))], off+done)
		if m > 0 {
			if _, werr := dst.Write(buf[:m]); werr != nil {
				return done, werr
			}
			done += int64(m)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}
