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
	"sync"

	"golang.org/x/sys/unix"
)

// ErrCorrupt is matched by errors.Is for every *CorruptError.
var ErrCorrupt = errors.New("corrupt file")

// CorruptError reports a file that could not be decoded (empty, truncated,
// not JSON, the wrong shape, or over its size cap) and that was moved aside
// so that the next write starts clean while the bad content is kept for
// inspection.
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
// to 0700, whatever the umask or its earlier mode. A directory it makes is
// durable when it returns (its parent is synced), as a file's name is after
// WriteFile: a session's directory holds the record that a reply says is
// on disk. It is for the daemon's own directories; a project's .sessiond
// is made by Project.EnsureStateDir.
func EnsureDir(path string) error {
	made := true
	if err := os.Mkdir(path, 0o700); errors.Is(err, fs.ErrExist) {
		made = false
	} else if err != nil {
		if err := os.MkdirAll(path, 0o700); err != nil {
			return fmt.Errorf("create directory %s: %w", path, err)
		}
	}
	// A symlink in the directory's place is refused, and the mode is set
	// through the descriptor checked: nothing else is ever changed. Chmod
	// only when needed: a needless one still dirties the inode, and the
	// next directory fsync then has to write it.
	fd, err := openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("refused: %s is a symlink, not a directory: %w", path, ErrFileType)
		}
		return fmt.Errorf("create directory %s: %w", path, err)
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	if err == nil && st.Mode&0o7777 != 0o700 {
		err = unix.Fchmod(fd, 0o700)
	}
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("set mode of directory %s: %w", path, err)
	}
	if !made {
		return nil
	}
	dfd, err := openDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("create directory %s: %w", path, err)
	}
	defer unix.Close(dfd)
	if err := syncDirFD(dfd); err != nil {
		return fmt.Errorf("create directory %s: %w", path, err)
	}
	return nil
}

// WriteFile replaces path with data atomically: it writes a temporary file
// ".NAME.tmp-N" in the same directory, sets perm on it (independent of the
// umask), fsyncs it, renames it over path and fsyncs the directory, all
// through a descriptor of the directory. On any failure before the rename
// (a full disk included) the previous file is intact and no temporary file
// is left; a failure of the final directory fsync is reported although the
// new content is in place. The directory must exist. A symlink at path is
// replaced, not followed.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dfd, err := openDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer unix.Close(dfd)
	return writeAt(dfd, filepath.Base(path), path, data, perm)
}

// marshalJSON is the one encoding of every JSON file: two-space indent and a
// trailing newline, so that files diff well and cat cleanly. It is
// json.MarshalIndent's output with the newline, copied out of encodeJSON's
// reused buffers.
func marshalJSON(v any) ([]byte, error) {
	e, err := encodeJSON(v)
	if err != nil {
		return nil, err
	}
	defer e.put()
	return bytes.Clone(e.indented), nil
}

// encodeJSON encodes v as marshalJSON does, compact and then indented in
// reused buffers (the end of a session writes half a dozen such files, and
// a thousand ends at once would otherwise allocate each twice over): the
// caller writes e.indented, then gives e back with put, after which the
// bytes are not its own. The records, written three times an end, were a
// sixth of what the daemon allocated over a stop of a thousand when each
// was copied out.
func encodeJSON(v any) (*jsonEncoder, error) {
	e := jsonEncoders.Get().(*jsonEncoder)
	if err := e.enc.Encode(v); err != nil {
		e.put()
		return nil, err
	}
	// Encode ends the value with a newline.
	compact := bytes.TrimSuffix(e.buf.Bytes(), []byte{'\n'})
	e.indented = append(appendIndented(e.indented[:0], compact), '\n')
	return e, nil
}

// jsonEncoder is an encoder, the buffer it writes into and the one the
// indent goes to.
type jsonEncoder struct {
	buf      bytes.Buffer
	enc      *json.Encoder
	indented []byte
}

var jsonEncoders = sync.Pool{New: func() any {
	e := &jsonEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// maxKeptEncoding is the largest buffer an encoder keeps for the next file.
const maxKeptEncoding = 256 << 10

func (e *jsonEncoder) put() {
	if e.buf.Cap() > maxKeptEncoding || cap(e.indented) > maxKeptEncoding {
		return
	}
	e.buf.Reset()
	jsonEncoders.Put(e)
}

// WriteJSON writes v to path as pretty-printed JSON (two-space indent,
// trailing newline), mode 0600, atomically as WriteFile does.
func WriteJSON(path string, v any) error {
	e, err := encodeJSON(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	defer e.put()
	return WriteFile(path, e.indented, 0o600)
}

// ReadJSON decodes the JSON file at path into v. The file is read as every
// input is: opened non-blocking, required to be a regular file (a FIFO or a
// device gives an error matching ErrFileType), and at most MaxRecordSize
// bytes. A missing file gives an error that wraps fs.ErrNotExist. Content
// that is empty, truncated, not JSON, null, of the wrong shape for v, or
// over the cap makes the file move aside as NAME.corrupt-<UTC time> and
// gives a *CorruptError; v may then be partly filled and should be
// discarded. Unknown fields are ignored, so that files written by a newer
// version still load.
func ReadJSON(path string, v any) error {
	return readJSONPath(path, MaxRecordSize, v)
}

// ReadRecord is ReadJSON for a session's record, written by WriteRecord:
// of the record and its spare, the one with the higher seq that decodes
// (a crash of the machine may have left the last write under the spare's
// name). When that is the spare, the two are exchanged back first, and
// the exchange synced, so that the next write goes over the older. The
// record may be empty: one made ahead of its first write (SpareDirs), or
// one a crash of the machine left empty before its first sync; an empty
// record with no newer spare gives ErrEmpty and stays where it is.
// Anything else that does not decode is moved aside as ReadJSON does.
func ReadRecord(path string, v any) error {
	_, err := RecoverRecord(path, v)
	return err
}

// RecoverRecord is ReadRecord that also says what it kept aside: a record
// that is none (unreadable, not JSON, no session's) with a spare that is
// one is moved aside as NAME.corrupt-<time> (aside, a *CorruptError), and
// the spare takes its name.
func RecoverRecord(path string, v any) (aside, err error) {
	// It may exchange the names: not while a deferred write's sync runs.
	_ = pendingSyncs.wait(path)
	dfd, err := openDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	name := filepath.Base(path)
	data, _, err := readAt(dfd, name, path, MaxRecordSize, false)
	if spare, ok := newerSpare(dfd, name, path, data, err); ok {
		if broken := brokenRecord(data, err); broken != nil {
			aside = moveAsideAt(dfd, name, path, broken)
			if unix.Renameat(dfd, SpareName(name), dfd, name) == nil {
				_ = syncDirFD(dfd)
			}
		} else if swapped, err := exchanged(dfd, SpareName(name), name); err == nil && swapped {
			_ = syncDirFD(dfd)
		}
		return aside, decodeJSON(spare, v)
	}
	if errors.Is(err, ErrTooLarge) {
		return nil, moveAsideAt(dfd, name, path, err)
	}
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrEmpty)
	}
	if err := decodeJSON(data, v); err != nil {
		return nil, moveAsideAt(dfd, name, path, err)
	}
	return nil, nil
}

// brokenRecord says why a record read as data (with the error err) is
// none at all, or nil: a missing or empty one is a record not yet
// written, and one that decodes with an id is a record, if an old one.
func brokenRecord(data []byte, err error) error {
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if len(data) == 0 {
		return nil
	}
	var cur recordSeq
	if err := json.Unmarshal(data, &cur); err != nil {
		return err
	}
	if cur.ID == "" {
		return errors.New("no session id in it")
	}
	return nil
}

// recordSeq is what tells two writes of a record apart.
type recordSeq struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
}

// newerSpare returns the content of name's spare in dirfd when it is a
// record newer than data, read from name with the error err: of the same
// session, with a higher seq, or a whole record where name holds none.
func newerSpare(dirfd int, name, display string, data []byte, err error) ([]byte, bool) {
	spare, _, serr := readAt(dirfd, SpareName(name), display+" (its spare)", MaxRecordSize, true)
	if serr != nil || len(spare) == 0 {
		return nil, false
	}
	var s recordSeq
	if json.Unmarshal(spare, &s) != nil {
		return nil, false
	}
	var cur recordSeq
	if err != nil || len(data) == 0 || json.Unmarshal(data, &cur) != nil || cur.ID == "" {
		return spare, true
	}
	return spare, s.ID == cur.ID && s.Seq > cur.Seq
}

func readJSONPath(path string, limit int64, v any) error {
	dfd, err := openDir(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return readJSONAt(dfd, filepath.Base(path), path, limit, false, v)
}

// ErrEmpty is what reading a JSON file that holds nothing gives: a file
// made ahead of its first write (SpareDirs), or left empty by a crash of
// the machine after a write that was not synced.
var ErrEmpty = errors.New("file is empty")

// decodeJSON is json.Unmarshal with the cases it accepts silently (empty
// input is an error already; null is not) turned into errors, and with
// syntax errors located by line and column.
func decodeJSON(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		return ErrEmpty
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

// PrivateDir checks that no user but the daemon's own (and root) can
// change what path names: path is a directory, not a symlink, and it and
// every directory above it are owned by root or the daemon's user, and
// writable by no one else (a sticky directory, as /tmp, excepted for the
// entries above path). A daemon makes files by path only in such a
// directory.
func PrivateDir(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	euid := uint32(os.Geteuid())
	for p, first := abs, true; ; p, first = filepath.Dir(p), false {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		switch {
		case first && st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return fmt.Errorf("%s is not a directory: %w", p, ErrFileType)
		case st.Uid != 0 && st.Uid != euid:
			return fmt.Errorf("%s belongs to uid %d, not to root or the daemon's user", p, st.Uid)
		case st.Mode&0o022 != 0 && (first || st.Mode&unix.S_ISVTX == 0) && st.Mode&unix.S_IFMT == unix.S_IFDIR:
			return fmt.Errorf("%s is writable by others (mode %o)", p, st.Mode&0o7777)
		}
		if p == "/" {
			return nil
		}
	}
}
