package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteJSONReusing writes v to path as WriteJSON does — atomically, durably,
// the old content or the new one whatever happens — for a file rewritten
// often: a session's record, written at every transition. Each write goes
// into a spare file beside it (".NAME.spare", the content of the write
// before) and is swapped in with one atomic exchange of names, so that a
// rewrite takes and frees no inode. Where the file system cannot exchange
// names it is WriteJSON.
//
// Making and freeing inodes is what ends cost most at scale: a thousand
// sessions ending at once spent 12-15 % of the daemon's CPU in ext4 looking
// past recently freed inodes for a new one (bench/README.md, "At scale").
func WriteJSONReusing(path string, v any) error {
	return writeJSONReusing(path, v, durable)
}

// WriteCompactJSONReusing writes compact, a JSON value as json.Marshal
// encodes it, to path as WriteJSONReusing writes what it encodes: indented
// as every JSON file is, into the file's spare, durably. It is for a file
// whose writer keeps the encodings of its parts rather than encoding the
// whole at each write (the daemon's journal of stops).
func WriteCompactJSONReusing(path string, compact []byte) error {
	data := append(appendIndented(make([]byte, 0, len(compact)+len(compact)/2), compact), '\n')
	return writeFileReusing(path, data, durable)
}

// WriteRecord writes a session's record as WriteJSONReusing does, with one
// sync where that makes two: the content is synced, and its exchange with
// the spare is not (see paired). A crash of the machine once it returns
// leaves the record under its name or its spare's, whole; ReadRecord takes
// the newer of the two.
func WriteRecord(path string, v any) error {
	return writeJSONReusing(path, v, paired)
}

// WriteRecordCompact is WriteRecord that also returns v's compact
// encoding, what json.Marshal makes of it: an ended session's event
// carries the record just written, and encoding it a second time for the
// event was 1.5 % of the daemon's CPU over a stop of a thousand. The
// bytes are the caller's.
func WriteRecordCompact(path string, v any) (json.RawMessage, error) {
	e, err := encodeJSON(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", path, err)
	}
	defer e.put()
	compact := bytes.Clone(bytes.TrimSuffix(e.buf.Bytes(), []byte{'\n'}))
	if err := writeFileReusing(path, e.indented, paired); err != nil {
		return nil, err
	}
	return compact, nil
}

// WriteRecordDeferred is WriteRecord whose sync follows the write rather
// than being part of it: the record takes its name at once, its content is
// synced in the background, and the record's next write (or WaitSynced)
// waits for that sync. Until the sync is over, a crash of the machine
// leaves this record or the one before it, whole, as WriteRecord's does
// once it returns. It lets a start sync its session's first record while
// it goes on to start the command, and write the record of the running
// command without waiting for the disk again: the start's answer waits
// for the first record's sync (through the second's write), and the
// second's sync is over long before the record changes again.
func WriteRecordDeferred(path string, v any) error {
	return writeJSONReusing(path, v, deferred)
}

// WriteRecordLazily is WriteRecordDeferred whose sync waits to be shared:
// the records written so within lazyDelay of each other are synced
// together, with one sync of their file system, or each when it is
// written again (or WaitSynced) before that. It is for the record of a
// session's running command: its start is answered already (the record
// before it is on disk), and a batch of a thousand starts then makes a
// few syncs for their running records, not a thousand.
func WriteRecordLazily(path string, v any) error {
	return writeJSONReusing(path, v, lazy)
}

// WriteJSONReusingUnsynced is WriteJSONReusing whose name is not synced:
// the content is, before it takes the name, so that a crash of the machine
// leaves the old file or the new one, the old perhaps until the next
// WriteJSONReusing in that directory. It is for a write whose loss with the
// machine loses nothing: the record of a session that is starting, whose
// process would die with the machine. For a record, that is what
// WriteRecord does to a file that has its spare; the record of the
// running session, written next, is synced in turn, and ReadRecord takes
// the newer of the record and its spare.
func WriteJSONReusingUnsynced(path string, v any) error {
	return writeJSONReusing(path, v, contentOnly)
}

func writeJSONReusing(path string, v any, d durability) error {
	e, err := encodeJSON(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	defer e.put()
	return writeFileReusing(path, e.indented, d)
}

// writeFileReusing replaces path with data (mode 0600) with the
// durability d, into the spare beside it when there is one (writeReusing).
func writeFileReusing(path string, data []byte, d durability) error {
	dfd, err := openDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer unix.Close(dfd)
	return writeReusing(dfd, filepath.Base(path), path, data, 0o600, d)
}

// spareMark names the spare of NAME: "." + NAME + spareMark.
const spareMark = ".spare"

// SpareName is the name of the spare WriteJSONReusing keeps beside name.
func SpareName(name string) string { return "." + name + spareMark }

// writeReusing writes data into name's spare and exchanges the two names;
// without a spare (the first rewrite) a new temporary file is exchanged
// with name, and what it then holds, the old content, becomes the spare.
//
// A write of a file whose last write's sync is still under way (deferred)
// waits for that sync first: the spare it writes into may hold the only
// content of the file that is on disk.
func writeReusing(dirfd int, name, display string, data []byte, perm os.FileMode, d durability) error {
	before := pendingSyncs.wait(display)
	if err := writeReusingNow(dirfd, name, display, data, perm, d); err != nil {
		return err
	}
	if before != nil {
		return fmt.Errorf("write %s: the write before it was not synced: %w", display, before)
	}
	return nil
}

func writeReusingNow(dirfd int, name, display string, data []byte, perm os.FileMode, d durability) error {
	if !canExchange {
		return writeAtWith(dirfd, name, display, data, perm, synchronous(d))
	}
	spare := "." + name + spareMark
	fd, err := openat(dirfd, spare, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return writeKeepingSpare(dirfd, name, spare, display, data, perm, synchronous(d))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		// Not a spare of ours (a directory, a link): out of the way.
		unix.Close(fd)
		_ = unix.Unlinkat(dirfd, spare, 0)
		return writeKeepingSpare(dirfd, name, spare, display, data, perm, synchronous(d))
	}
	if d == deferred || d == lazy {
		return writeDeferred(dirfd, fd, &st, name, spare, display, data, perm, d)
	}
	// Over the old content, then cut to length where it was longer: a
	// record that grows or keeps its size frees no blocks either.
	if err := finishFile(fd, data, perm, os.FileMode(st.Mode&0o7777), st.Size > int64(len(data)), d != visible); err != nil {
		// The file itself is untouched; the spare is no longer one.
		_ = unix.Unlinkat(dirfd, spare, 0)
		return fmt.Errorf("write %s: %w", display, err)
	}
	// A spare never written into was made ahead of the file's first write
	// (a session's handoff): the name is most likely not there yet.
	swap := exchanged
	if st.Size == 0 {
		swap = placed
	}
	swapped, err := swap(dirfd, spare, name)
	if err != nil {
		_ = unix.Unlinkat(dirfd, spare, 0)
		return fmt.Errorf("write %s: swap into place: %w", display, err)
	}
	if d != durable && (d != paired || swapped) {
		return nil
	}
	if err := syncDirFD(dirfd); err != nil {
		return fmt.Errorf("write %s: %w", display, err)
	}
	return nil
}

// writeKeepingSpare is the first rewrite: a new temporary file, exchanged
// with name, then kept as the spare.
func writeKeepingSpare(dirfd int, name, spare, display string, data []byte, perm os.FileMode, d durability) error {
	tmp, fd, err := createTemp(dirfd, name)
	if err != nil {
		return fmt.Errorf("write %s: %w", display, err)
	}
	placed := false
	defer func() {
		if !placed {
			_ = unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	err = finishFile(fd, data, perm, tempMode(), false, d != visible)
	if err != nil {
		return fmt.Errorf("write %s: %w", display, err)
	}
	swapped, err := exchanged(dirfd, tmp, name)
	if err != nil {
		return fmt.Errorf("write %s: swap into place: %w", display, err)
	}
	placed = true
	// Exchanged, tmp holds what name held: the next write's spare. A
	// crash before this rename leaves a temporary file that the next
	// start removes (RemoveStaleTemps). Renamed (name was not there), it
	// is gone.
	if swapped {
		if err := unix.Renameat(dirfd, tmp, dirfd, spare); err != nil {
			_ = unix.Unlinkat(dirfd, tmp, 0)
		}
	}
	if d != durable && d != paired {
		return nil
	}
	if err := syncDirFD(dirfd); err != nil {
		return fmt.Errorf("write %s: %w", display, err)
	}
	return nil
}

// retireAt takes name in dirfd away from readers as removing it would, but
// keeps the file as name's spare for the next writeReusing to write into:
// a file that comes and goes with every session (the lock, the warning)
// then frees no inode at its end and takes none at its next start. Where
// names cannot be moved without replacing (or a spare is there already)
// the file is removed. A missing file is no error.
func retireAt(dirfd int, name, display string) error {
	if canExchange {
		switch err := renameNoReplace(dirfd, name, "."+name+spareMark); err {
		case nil:
			return syncDirFD(dirfd)
		case unix.ENOENT:
			return nil
		}
	}
	return removeAt(dirfd, name, display)
}

// retireUnsynced is retireAt whose directory the caller syncs, when it
// retired name as a spare; a removal is synced.
func retireUnsynced(dirfd int, name, display string) error {
	if canExchange {
		switch err := renameNoReplace(dirfd, name, "."+name+spareMark); err {
		case nil, unix.ENOENT:
			return nil
		}
	}
	return removeAt(dirfd, name, display)
}
