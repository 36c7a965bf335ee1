package checkpoint

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"os"
	"syscall"
	"time"
)

// A git index file (Documentation/gitformat-index.txt) is read here
// directly, without git: an incremental checkpoint needs the entries of the
// user's index under a few paths, and git would read (and hash) the whole
// file to list them — 30 ms for 350k files, most of the budget. Versions 2,
// 3 and 4 are read; a split index ("link" extension) or a sparse one
// ("sdir") is not, and makes the caller scan the whole work tree instead.

// Flags of an index entry (the 16-bit flags word, then the extended one).
const (
	ceAssumeValid = 0x8000
	ceExtended    = 0x4000
	ceStageMask   = 0x3000
	ceNameMask    = 0x0fff
	ceSkipTree    = 0x4000 // extended: skip-worktree
	ceIntentToAdd = 0x2000 // extended: intent-to-add
)

// Modes of index and tree entries.
const (
	modeDir     = 0o040000
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
	modeGitlink = 0o160000
)

// errIndexUnsupported means an index that is read only by git (split,
// sparse).
var errIndexUnsupported = errors.New("index format not supported here")

// indexEntry is one entry of an index file. Its slices point into the file's
// bytes (name: into a buffer reused for the next entry), so an entry is
// valid only during the scan callback that gets it.
type indexEntry struct {
	name   []byte
	fixed  []byte // stat data, mode and object id, as stored
	flags  uint16
	xflags uint16
}

func (e *indexEntry) path() string  { return string(e.name) }
func (e *indexEntry) mode() uint32  { return binary.BigEndian.Uint32(e.fixed[24:]) }
func (e *indexEntry) oid() []byte   { return e.fixed[40:] }
func (e *indexEntry) stage() int    { return int(e.flags&ceStageMask) >> 12 }
func (e *indexEntry) special() bool { return e.flags&ceAssumeValid != 0 || e.xflags&ceSkipTree != 0 }

// indexFile is an index read into memory.
type indexFile struct {
	data    []byte
	version uint32
	count   uint32
	hashLen int
	mtime   time.Time
	sig     fileSig
	sum     []byte // the trailing checksum
	unmap   func()
}

// openIndex maps the index file at path (read on the daemon's side as the
// credential's user may: see Credential.openUserFile). A missing index
// (an unborn repository) is an empty one.
func openIndex(path string, hashLen int, cred *Credential) (*indexFile, error) {
	f, fi, err := openUserFile(cred, path)
	if errors.Is(err, os.ErrNotExist) {
		return &indexFile{version: 2, hashLen: hashLen, unmap: func() {}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read index %s: %w", path, err)
	}
	defer f.Close()
	ix := &indexFile{hashLen: hashLen, mtime: fi.ModTime(), sig: sigOf(fi), unmap: func() {}}
	size := fi.Size()
	if size < int64(12+hashLen) {
		return nil, fmt.Errorf("read index %s: %w: %d bytes", path, ErrCorruptIndex, size)
	}
	if size > 1<<31 {
		return nil, fmt.Errorf("read index %s: %d bytes: %w", path, size, errIndexUnsupported)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		// A file system without mmap: read it.
		data = make([]byte, size)
		if _, err := f.ReadAt(data, 0); err != nil {
			return nil, fmt.Errorf("read index %s: %w", path, err)
		}
	} else {
		ix.unmap = func() { _ = syscall.Munmap(data) }
	}
	ix.data = data
	if err := ix.header(); err != nil {
		ix.unmap()
		return nil, fmt.Errorf("read index %s: %w", path, err)
	}
	ix.sum = data[len(data)-hashLen:]
	return ix, nil
}

func (ix *indexFile) close() { ix.unmap() }

func (ix *indexFile) header() error {
	d := ix.data
	if string(d[:4]) != "DIRC" {
		return fmt.Errorf("%w: bad signature", ErrCorruptIndex)
	}
	ix.version = binary.BigEndian.Uint32(d[4:])
	if ix.version < 2 || ix.version > 4 {
		return fmt.Errorf("version %d: %w", ix.version, errIndexUnsupported)
	}
	ix.count = binary.BigEndian.Uint32(d[8:])
	return nil
}

// scan calls fn for every entry in order, then checks the extensions. It
// stops early, without error, when fn returns false.
func (ix *indexFile) scan(fn func(e *indexEntry) bool) error {
	d := ix.data
	if d == nil {
		return nil
	}
	end := len(d) - ix.hashLen
	fixedLen := 40 + ix.hashLen
	off := 12
	var prev []byte // v4: the previous path
	var e indexEntry
	for i := uint32(0); i < ix.count; i++ {
		hdr := fixedLen + 2
		if off+hdr > end {
			return fmt.Errorf("%w: entry %d truncated", ErrCorruptIndex, i)
		}
		e.fixed = d[off : off+fixedLen]
		e.flags = binary.BigEndian.Uint16(d[off+fixedLen:])
		e.xflags = 0
		if e.flags&ceExtended != 0 {
			if ix.version < 3 || off+hdr+2 > end {
				return fmt.Errorf("%w: entry %d: bad extended flags", ErrCorruptIndex, i)
			}
			e.xflags = binary.BigEndian.Uint16(d[off+hdr:])
			hdr += 2
		}
		if e.mode() == modeDir {
			return fmt.Errorf("sparse directory entry: %w", errIndexUnsupported)
		}
		var name []byte
		if ix.version == 4 {
			strip, n := decodeVarint(d[off+hdr : end])
			if n == 0 || int(strip) > len(prev) {
				return fmt.Errorf("%w: entry %d: bad path prefix", ErrCorruptIndex, i)
			}
			rest := d[off+hdr+n : end]
			nul := bytes.IndexByte(rest, 0)
			if nul < 0 {
				return fmt.Errorf("%w: entry %d: unterminated path", ErrCorruptIndex, i)
			}
			prev = append(prev[:len(prev)-int(strip)], rest[:nul]...)
			name = prev
			off += hdr + n + nul + 1
		} else {
			rest := d[off+hdr : end]
			n := int(e.flags & ceNameMask)
			if n == ceNameMask || n >= len(rest) || rest[n] != 0 {
				n = bytes.IndexByte(rest, 0)
				if n < 0 {
					return fmt.Errorf("%w: entry %d: unterminated path", ErrCorruptIndex, i)
				}
			}
			name = rest[:n]
			off += (hdr + n + 8) &^ 7
		}
		e.name = name
		if !fn(&e) {
			return nil
		}
	}
	for off+8 <= end {
		sig := string(d[off : off+4])
		size := int(binary.BigEndian.Uint32(d[off+4:]))
		switch sig {
		case "link", "sdir":
			return fmt.Errorf("%q extension: %w", sig, errIndexUnsupported)
		}
		if off+8+size > end {
			return fmt.Errorf("%w: extension %q truncated", ErrCorruptIndex, sig)
		}
		off += 8 + size
	}
	return nil
}

// decodeVarint reads git's offset varint (varint.c); n is 0 on error.
func decodeVarint(b []byte) (val uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	val = uint64(c & 127)
	n = 1
	for c&128 != 0 {
		if n >= len(b) || n > 9 {
			return 0, 0
		}
		val++
		c = b[n]
		n++
		val = val<<7 + uint64(c&127)
	}
	return val, n
}

// indexWriter writes a version 2 or 3 index of copied entries, no
// extensions.
type indexWriter struct {
	buf     bytes.Buffer
	count   uint32
	hashLen int
	v3      bool
}

func newIndexWriter(hashLen int) *indexWriter {
	w := &indexWriter{hashLen: hashLen}
	w.buf.Write(make([]byte, 12)) // header, filled in by bytes
	return w
}

// add appends a copy of e; entries must come in index order.
func (w *indexWriter) add(e *indexEntry) {
	w.buf.Write(e.fixed)
	flags := e.flags &^ ceNameMask
	flags |= uint16(min(len(e.name), ceNameMask))
	hdr := len(e.fixed) + 2
	var b [2]byte
	if e.xflags != 0 {
		flags |= ceExtended
		w.v3 = true
		hdr += 2
	} else {
		flags &^= ceExtended
	}
	binary.BigEndian.PutUint16(b[:], flags)
	w.buf.Write(b[:])
	if e.xflags != 0 {
		binary.BigEndian.PutUint16(b[:], e.xflags)
		w.buf.Write(b[:])
	}
	w.buf.Write(e.name)
	pad := ((hdr + len(e.name) + 8) &^ 7) - hdr - len(e.name)
	w.buf.Write(make([]byte, pad))
	w.count++
}

// bytes returns the finished index file.
func (w *indexWriter) bytes() []byte {
	out := w.buf.Bytes()
	copy(out, "DIRC")
	version := uint32(2)
	if w.v3 {
		version = 3
	}
	binary.BigEndian.PutUint32(out[4:], version)
	binary.BigEndian.PutUint32(out[8:], w.count)
	var h hash.Hash = sha1.New()
	if w.hashLen == 32 {
		h = sha256.New()
	}
	h.Write(out)
	return h.Sum(out)
}
