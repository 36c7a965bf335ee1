package logfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// RenamedReader reads a log whose only writer rotates it by renaming, as a
// terminal holder does: output.log is renamed to output.log.1 (older files
// shift up, the oldest is dropped) and a new output.log is started. It
// reads output.log.<keep-1> … output.log.1, output.log as one stream, and
// a follower that reads on after io.EOF follows output.log across its
// renames, and through the files rotated meanwhile. Each file is read
// through a descriptor of its own, so a rename never moves bytes under a
// reader; only a follower that falls behind by more than the files kept
// misses what was rotated out before it got there.
type RenamedReader struct {
	path  string
	keep  int
	files []*os.File // oldest first; the last is output.log as opened
	ino   uint64     // inode of the last file
	i     int        // the file being read
}

// OpenRenamed opens the log at path, with up to keep-1 rotated files,
// positioned at the start of its last n lines (n <= 0: at its oldest byte).
func OpenRenamed(path string, keep, n int) (*RenamedReader, error) {
	var r *RenamedReader
	var err error
	// A rotation between the opening of the files is seen (the live file
	// is no longer at the path, or turns up as a rotated one) and the
	// opening done again.
	for range 10 {
		if r, err = openRenamedOnce(path, keep); r != nil || err != nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("open log %s: it is rotated faster than it can be opened", path)
	}
	if n > 0 {
		if err := r.seekTail(n); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

func openRenamedOnce(path string, keep int) (*RenamedReader, error) {
	live, ino, err := openIno(path)
	if err != nil {
		return nil, err
	}
	r := &RenamedReader{path: path, keep: keep, ino: ino}
	var rotated []*os.File
	for i := 1; i < keep; i++ {
		f, fino, err := openIno(path + "." + strconv.Itoa(i))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			live.Close()
			closeAll(rotated)
			return nil, err
		}
		rotated = append(rotated, f)
		if fino == ino {
			live.Close()
			closeAll(rotated)
			return nil, nil
		}
	}
	if now, err := inode(path); err != nil || now != ino {
		live.Close()
		closeAll(rotated)
		return nil, nil
	}
	for i := len(rotated) - 1; i >= 0; i-- {
		r.files = append(r.files, rotated[i])
	}
	r.files = append(r.files, live)
	return r, nil
}

func openIno(path string) (*os.File, uint64, error) {
	f, err := openFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("open log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("stat log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("log %s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return f, inodeOf(fi), nil
}

func inode(path string) (uint64, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, err
	}
	return inodeOf(fi), nil
}

func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// seekTail positions the reader at the start of the last n lines, reading
// backwards through the files with one buffer. A final newline ends the
// last line rather than starting an empty one.
func (r *RenamedReader) seekTail(n int) error {
	buf := make([]byte, tailChunk)
	lines := 0
	skipLast := true
	for i := len(r.files) - 1; i >= 0; i-- {
		fi, err := r.files[i].Stat()
		if err != nil {
			return fmt.Errorf("stat log: %w", err)
		}
		pos := fi.Size()
		for pos > 0 {
			step := min(int64(len(buf)), pos)
			from := pos - step
			if _, err := r.files[i].ReadAt(buf[:step], from); err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("read log: %w", err)
			}
			b := buf[:step]
			for j := len(b) - 1; j >= 0; j-- {
				if b[j] != '\n' {
					skipLast = false
					continue
				}
				if skipLast {
					skipLast = false
					continue
				}
				lines++
				if lines == n {
					return r.seekTo(i, from+int64(j)+1)
				}
			}
			pos = from
		}
	}
	return r.seekTo(0, 0)
}

// seekTo makes file i, at off, the next byte read.
func (r *RenamedReader) seekTo(i int, off int64) error {
	for _, f := range r.files[:i] {
		f.Close()
	}
	r.files = r.files[i:]
	r.i = 0
	if _, err := r.files[0].Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("seek log: %w", err)
	}
	return nil
}

// Read reads the next bytes of the stream. io.EOF means none are written
// yet: read again after the next write to the log.
func (r *RenamedReader) Read(p []byte) (int, error) {
	for {
		n, err := r.files[r.i].Read(p)
		if n > 0 || (err != nil && !errors.Is(err, io.EOF)) {
			return n, err
		}
		if r.i < len(r.files)-1 {
			r.files[r.i].Close()
			r.i++
			continue
		}
		// At the end of output.log as opened: if it has been renamed
		// away, the rest of it is read, then the files rotated after it,
		// then the new output.log.
		now, err := inode(r.path)
		if err != nil || now == r.ino {
			return 0, io.EOF
		}
		newer, ino, err := r.newerFiles()
		if err != nil || newer == nil {
			return 0, io.EOF // between a rename and the new file: later
		}
		// The writer may have added to the old file between the last read
		// and its rename.
		if n, err := r.files[r.i].Read(p); n > 0 || (err != nil && !errors.Is(err, io.EOF)) {
			closeAll(newer)
			return n, err
		}
		r.files[r.i].Close()
		r.files, r.i, r.ino = newer, 0, ino
	}
}

// newerFiles opens what was written after the file being read, whose
// inode is r.ino, oldest first: the rotated files newer than it (all that
// are kept, when it has been rotated out altogether) and output.log. A nil
// list means the files moved while they were opened: ask again.
func (r *RenamedReader) newerFiles() ([]*os.File, uint64, error) {
	for range 10 {
		fresh, err := openRenamedOnce(r.path, r.keep)
		if err != nil {
			return nil, 0, err
		}
		if fresh == nil {
			continue
		}
		// fresh.files: oldest rotated … newest rotated, output.log.
		start := 0
		for i, f := range fresh.files[:len(fresh.files)-1] {
			if fi, err := f.Stat(); err == nil && inodeOf(fi) == r.ino {
				start = i + 1
			}
		}
		closeAll(fresh.files[:start])
		return fresh.files[start:], fresh.ino, nil
	}
	return nil, 0, nil
}

// Close releases the reader's descriptors.
func (r *RenamedReader) Close() error {
	for _, f := range r.files[r.i:] {
		f.Close()
	}
	return nil
}
