package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// maxFileSize bounds what ReadJSON reads: every file of this package is a few
// kilobytes, and a runaway file must not take the daemon's memory with it.
const maxFileSize = 32 << 20

// ErrCorrupt is matched by errors.Is for every *CorruptError.
var ErrCorrupt = errors.New("corrupt file")

// CorruptError reports a file that could not be decoded (empty, truncated,
// not JSON, or the wrong shape) and that was moved aside so that the next
// write starts clean while the bad content is kept for inspection.
type CorruptError struct {
	// Path is the file that was read.
	Path string
	// KeptAs is where the bad content was moved, or "" if moving it failed.
	KeptAs string
	// Err says why the content was rejected.
	Err error
	// MoveErr is why the file could not be moved aside, if it could not.
	MoveErr error
}

// Error says what file was corrupt, why, and where its content was kept.
func (e *CorruptError) Error() string {
	if e.KeptAs != "" {
		return fmt.Sprintf("%s is corrupt (%v); kept as %s", e.Path, e.Err, e.KeptAs)
	}
	return fmt.Sprintf("%s is corrupt (%v); could not move it aside: %v", e.Path, e.Err, e.MoveErr)
}

// Unwrap returns the decoding error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// EnsureDir creates path and its parents with mode 0700 and sets path itself
// to 0700, whatever the umask or its earlier mode.
func EnsureDir(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return fmt.Errorf("create directory %s: %w", path, err)
	}
	// Chmod only when needed: a needless one still dirties the inode, and
	// the next directory fsync then has to write it.
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("create directory %s: %w", path, err)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(path, 0o700); err != nil {
			return fmt.Errorf("set mode of directory %s: %w", path, err)
		}
	}
	return nil
}

// fsyncFile is File.Sync; tests replace it to simulate a full disk.
var fsyncFile = (*os.File).Sync

// WriteFile replaces path with data atomically: it writes a temporary file in
// the same directory, sets perm on it (independent of the umask), fsyncs it,
// renames it over path and fsyncs the directory. On any failure before the
// rename the previous file is intact and no temporary file is left; a failure
// of the final directory fsync is reported although the new content is in
// place. The directory must exist.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if err != nil && !renamed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = fsyncFile(f); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	renamed = true
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// syncDir makes a rename or removal in dir durable. Filesystems that cannot
// fsync a directory say EINVAL; there is nothing more to do on them.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// marshalJSON is the one encoding of every JSON file: two-space indent and a
// trailing newline, so that files diff well and cat cleanly.
func marshalJSON(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// WriteJSON writes v to path as pretty-printed JSON (two-space indent,
// trailing newline), mode 0600, atomically as WriteFile does.
func WriteJSON(path string, v any) error {
	data, err := marshalJSON(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFile(path, data, 0o600)
}

// ReadJSON decodes the JSON file at path into v. A missing file gives an
// error that wraps fs.ErrNotExist. Content that is empty, truncated, not JSON,
// null, or of the wrong shape for v makes the file move aside as
// NAME.corrupt-<UTC time> and gives a *CorruptError; v may then be partly
// filled and should be discarded. Unknown fields are ignored, so that files
// written by a newer version still load.
func ReadJSON(path string, v any) error {
	data, err := readFile(path)
	if err != nil {
		return err
	}
	if err := decodeJSON(data, v); err != nil {
		return moveAside(path, err)
	}
	return nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError: says "open PATH: why"
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, maxFileSize)
	}
	return data, nil
}

// decodeJSON is json.Unmarshal with the cases it accepts silently (empty
// input is an error already; null is not) turned into errors, and with
// syntax errors located by line and column.
func decodeJSON(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		return errors.New("file is empty")
	case bytes.Equal(trimmed, []byte("null")):
		return errors.New("file holds null, not a JSON object")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return locate(data, err)
	}
	return nil
}

// locate adds the line and column to a JSON error that carries an offset.
func locate(data []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = max(0, syn.Offset-1) // Offset counts the offending byte
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err.Error() == "unexpected end of JSON input" {
		return fmt.Errorf("truncated JSON: %w", err)
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	line, col := lineCol(data, off)
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// lineCol turns a byte offset into a 1-based line and byte column.
func lineCol(data []byte, off int64) (line, col int) {
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// moveAside renames a corrupt file to NAME.corrupt-<UTC time>, never
// replacing an earlier corrupt copy, and returns the *CorruptError for it.
func moveAside(path string, why error) error {
	ce := &CorruptError{Path: path, Err: why}
	base := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
	for i := 0; i < 100; i++ {
		dst := base
		if i > 0 {
			dst = fmt.Sprintf("%s-%d", base, i)
		}
		// link+remove never clobbers an earlier copy; rename would.
		err := os.Link(path, dst)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			if _, serr := os.Lstat(dst); serr == nil {
				continue
			}
			err = os.Rename(path, dst)
		} else {
			err = os.Remove(path)
		}
		if err != nil {
			ce.MoveErr = err
			return ce
		}
		ce.KeptAs = dst
		if err := syncDir(filepath.Dir(path)); err != nil {
			ce.MoveErr = err
		}
		return ce
	}
	ce.MoveErr = errors.New("too many corrupt copies already kept")
	return ce
}

// removeFile removes path durably; a missing file is not an error.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err // *PathError: says "remove PATH: why"
	}
	return syncDir(filepath.Dir(path))
}
