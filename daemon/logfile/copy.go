package logfile

import (
	"errors"
	"io"
	"os"
	"sync"
)

// copyBuffers are the buffers of copies on filesystems without
// copy_file_range, shared by every log: a log holds none while it idles.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// copyBuffered appends n bytes of src from offset off to dst through a
// pooled buffer, for filesystems that cannot copy inside the kernel.
func copyBuffered(dst, src *os.File, off, n int64) (int64, error) {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
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
