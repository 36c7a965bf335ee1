package state

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// ErrFileType is matched by errors.Is when a path is not the kind of file
// the daemon expects there: an input that is a FIFO, a device, a socket, a
// directory or a symlink where none may be.
var ErrFileType = errors.New("wrong file type")

// ErrTooLarge is matched by errors.Is when an input file exceeds its cap.
var ErrTooLarge = errors.New("file too large")

// inputFlags open every file the daemon reads: O_NONBLOCK so that opening
// a FIFO never waits for a writer (and reading one never waits for data),
// O_NOCTTY so that a terminal device cannot become the daemon's.
const inputFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY

// fileKind names the type of a file for messages.
func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return "of an unknown type"
}

// notRegular is the error for an input that is not a regular file.
func notRegular(name string, mode uint32) error {
	return fmt.Errorf("%s is %s, not a regular file: %w", name, fileKind(mode), ErrFileType)
}

// readOpened reads the file open as fd, which it closes, after checking
// that it is a regular file of at most limit bytes. A regular file ignores
// O_NONBLOCK; should a file system honour it, the read that says EAGAIN
// clears it and is made again, so that the common read costs no fcntl.
// The size is checked before reading and again while reading, since the
// file may grow. name is the path for messages.
func readOpened(fd int, name string, limit int64) ([]byte, uint32, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, fmt.Errorf("stat %s: %w", name, err)
	}
	mode := uint32(st.Mode)
	if mode&unix.S_IFMT != unix.S_IFREG {
		return nil, mode, notRegular(name, mode)
	}
	if st.Size > limit {
		return nil, mode, tooLarge(name, st.Size, limit)
	}
	buf := make([]byte, st.Size+1) // one byte more shows a file that grew
	n := 0
	blocking := false
	for {
		if n == len(buf) {
			if int64(n) > limit {
				return nil, mode, tooLarge(name, int64(n), limit)
			}
			buf = append(buf, make([]byte, min(int64(len(buf)), limit+1-int64(n)))...)
		}
		m, err := unix.Read(fd, buf[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN && !blocking:
			blocking = true
			if err := clearNonblock(fd); err != nil {
				return nil, mode, fmt.Errorf("read %s: %w", name, err)
			}
			continue
		case err != nil:
			return nil, mode, fmt.Errorf("read %s: %w", name, err)
		case m == 0:
			return buf[:n], mode, nil
		}
		n += m
	}
}

// clearNonblock makes reads of fd wait.
func clearNonblock(fd int) error {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	return err
}

func tooLarge(name string, size, limit int64) error {
	return fmt.Errorf("%s is larger than the %s limit (%d bytes or more): %w", name, byteSize(limit), size, ErrTooLarge)
}

// byteSize writes a cap as "1 MiB" or "64 KiB".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + "-byte"
}

// readAt opens name in dirfd as an input (following a final symlink unless
// nofollow) and reads it as readOpened does.
func readAt(dirfd int, name, display string, limit int64, nofollow bool) ([]byte, uint32, error) {
	flags := inputFlags
	if nofollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := openat(dirfd, name, flags, 0)
	if err != nil {
		return nil, 0, openError(dirfd, name, display, err)
	}
	return readOpened(fd, display, limit)
}

// openError turns a failed open into an error naming display; ELOOP from
// O_NOFOLLOW is a refused symlink.
func openError(dirfd int, name, display string, err error) error {
	if err == unix.ELOOP || err == unix.ENOTDIR {
		var st unix.Stat_t
		if fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return fmt.Errorf("refused: %s is a symlink: %w", display, ErrFileType)
		}
	}
	return &fs.PathError{Op: "open", Path: display, Err: err}
}

// fsyncFD is unix.Fsync; tests replace it to simulate a failing disk.
var fsyncFD = unix.Fsync

// syncs counts the syncs the daemon's writes made (fsync and syncfs).
var syncs atomic.Uint64

// Syncs is how many syncs the writes of this process made: a file's,
// a directory's or a file system's (group commit) each count one.
func Syncs() uint64 { return syncs.Load() }

func fsyncCounted(fd int) error {
	syncs.Add(1)
	return fsyncFD(fd)
}

func syncFSCounted(fd int) error {
	syncs.Add(1)
	return syncFS(fd)
}

// durability is what an atomic write waits for. Readers see the old file
// or the new one whatever it is: the temporary file takes the name whole.
type durability int

const (
	// durable: the content is synced before it takes the name, the name
	// after. The write survives a crash of the machine once it returns.
	durable durability = iota
	// contentOnly: the content is synced before it takes the name, the
	// name is not. A crash of the machine leaves the old file or the new
	// one, the old perhaps until the directory's next sync (which any
	// later durable write in it makes). For a write whose loss with the
	// machine loses nothing: a session's record while it starts, whose
	// process would die with the machine.
	contentOnly
	// paired: the content is synced before it takes the name, and the
	// name is not when the file is exchanged with its spare. The spare
	// then holds the content before, the last write synced, and keeps it
	// until the next write is synced in turn, over the spare: whatever a
	// crash of the machine leaves of the names, the newest synced content
	// is whole under one of the two, and a reader who takes the newer
	// (ReadRecord, by the record's seq) finds it. A write without a spare
	// to exchange with (a new file) syncs its name as durable does.
	paired
	// visible: nothing is synced; a crash of the machine may leave the
	// file empty. For a file made again before anyone reads it after a
	// restart: context.md, written at every start for that session.
	visible
	// deferred: paired, its sync after the write rather than in it. The
	// file is exchanged with its spare at once, its content synced in the
	// background (pendingSyncs); the next write of the file waits for
	// that sync before it writes into the spare, which holds the last
	// content synced until then. A crash of the machine before the sync
	// leaves the new content or the one before, as paired does once it
	// returns; the writer who needs the write on disk waits for it with
	// the next write (or WaitSynced). Without a spare to exchange with it
	// is paired.
	deferred
	// lazy: deferred, its sync shared with the other lazy writes of
	// lazyDelay (one sync of their file system) unless the file is
	// written again (or waited for) first.
	lazy
)

// writeAt replaces name in the directory dirfd with data atomically: a
// temporary file ".NAME.tmp-N" is created beside it (O_EXCL, O_NOFOLLOW),
// written, set to perm (independent of the umask), fsynced and renamed over
// name, and then the directory is fsynced. Until the rename the previous
// file is untouched, and on failure the temporary file is removed; a full
// disk thus fails the write with ENOSPC and leaves the old content. A
// symlink at name is replaced, never followed. display names the file in
// errors.
func writeAt(dirfd int, name, display string, data []byte, perm os.FileMode) error {
	return writeAtWith(dirfd, name, display, data, perm, durable)
}

// writeAtWith is writeAt with the durability d.
func writeAtWith(dirfd int, name, display string, data []byte, perm os.FileMode, d durability) error {
	tmp, fd, err := createTemp(dirfd, name)
	if err != nil {
		return fmt.Errorf("write %s: %w", display, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	err = finishFile(fd, data, perm, tempMode(), false, d != visible)
	if err != nil {
		return fmt.Errorf("write %s: %w", display, err)
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return fmt.Errorf("write %s: rename into place: %w", display, err)
	}
	renamed = true
	if d != durable && d != paired {
		return nil
	}
	if err := syncDirFD(dirfd); err != nil {
		return fmt.Errorf("write %s: %w", display, err)
	}
	return nil
}

// finishFile writes data into the new file fd (cut to its length when
// cut, a longer spare written over), sets its mode to perm unless mode,
// what it has, is that already (0: not known), syncs it if sync and
// closes it.
func finishFile(fd int, data []byte, perm, mode os.FileMode, cut, sync bool) error {
	err := fillFile(fd, data, perm, mode, cut)
	if err == nil && sync {
		if err = syncFile(fd); err != nil {
			err = fmt.Errorf("fsync: %w", err)
		}
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// fillFile writes data at the start of fd, cut to its length where cut
// says the file was longer, with perm where its mode (0: unknown) differs.
func fillFile(fd int, data []byte, perm, mode os.FileMode, cut bool) error {
	err := writeAll(fd, data)
	if err == nil && cut {
		err = unix.Ftruncate(fd, int64(len(data)))
	}
	if err == nil && (mode == 0 || mode != perm.Perm()) {
		// A needless chmod still costs a change of the inode.
		err = unix.Fchmod(fd, uint32(perm.Perm()))
	}
	return err
}

// tempMark makes the name of an atomic write's temporary file:
// "." + NAME + ".tmp-" + digits, the pattern RemoveStaleTemps looks for.
const tempMark = ".tmp-"

// tempMode is the mode createTemp's files have: 0600 less the umask, read
// once, at the first write (the daemon never changes it; the processes that
// never write, such as a terminal's holder, never read it); 0 where it
// cannot be read.
var tempMode = sync.OnceValue(func() os.FileMode {
	if m, ok := readUmask(); ok {
		return 0o600 &^ m
	}
	return 0
})

// createTemp creates a new temporary file for name in dirfd, mode 0600
// less the umask (tempMode).
func createTemp(dirfd int, name string) (string, int, error) {
	for range 100 {
		tmp := "." + name + tempMark + strconv.FormatUint(rand.Uint64()%1e12, 10)
		fd, err := openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600)
		if err == unix.EEXIST {
			continue
		}
		return tmp, fd, err
	}
	return "", -1, errors.New("no free temporary file name")
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// syncDirFD makes a rename or removal in a directory durable. Filesystems
// that cannot fsync a directory say EINVAL; there is nothing more to do.
func syncDirFD(dirfd int) error {
	if err := syncDirGroup(dirfd); err != nil {
		return fmt.Errorf("fsync directory: %w", err)
	}
	return nil
}

// removeAt removes name from dirfd durably; a missing file is no error.
func removeAt(dirfd int, name, display string) error {
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return &fs.PathError{Op: "remove", Path: display, Err: err}
	}
	return syncDirFD(dirfd)
}

// moveAsideAt renames the corrupt file name in dirfd to
// NAME.corrupt-<UTC time>, never replacing an earlier copy, and returns the
// *CorruptError for it. display is name's path for messages.
func moveAsideAt(dirfd int, name, display string, why error) error {
	ce := &CorruptError{Path: display, Err: why}
	base := name + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
	for i := range 100 {
		dst := base
		if i > 0 {
			dst = fmt.Sprintf("%s-%d", base, i)
		}
		// link+unlink never clobbers an earlier copy; a plain rename would.
		err := unix.Linkat(dirfd, name, dirfd, dst, 0)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			var st unix.Stat_t
			if fstatat(dirfd, dst, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				continue
			}
			err = unix.Renameat(dirfd, name, dirfd, dst)
		} else {
			err = unix.Unlinkat(dirfd, name, 0)
		}
		if err != nil {
			ce.MoveErr = err
			return ce
		}
		ce.KeptAs = filepath.Join(filepath.Dir(display), dst)
		if err := syncDirFD(dirfd); err != nil {
			ce.MoveErr = err
		}
		return ce
	}
	ce.MoveErr = errors.New("too many corrupt copies already kept")
	return ce
}

// openDir opens the directory at path (following symlinks) for use as a
// directory fd that can also be fsynced.
func openDir(path string) (int, error) {
	fd, err := openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open directory", Path: path, Err: err}
	}
	return fd, nil
}

// isTempName reports whether name is an atomic write's temporary file:
// "." + NAME + ".tmp-" + letters or digits (os.CreateTemp's or ours).
func isTempName(name string) bool {
	if len(name) < 2 || name[0] != '.' {
		return false
	}
	i := strings.LastIndex(name, tempMark)
	if i < 2 {
		return false
	}
	suffix := name[i+len(tempMark):]
	if suffix == "" {
		return false
	}
	for _, c := range suffix {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// RemoveStaleTemps removes the temporary files that interrupted atomic
// writes left in dir and in its subdirectories down to depth levels below
// it: regular files named ".NAME.tmp-*" last modified more than
// StaleTempAge ago, so that a concurrent writer's file is never touched.
// Symlinks are neither followed nor removed. It returns the paths removed;
// the error joins what could not be read or removed. The daemon calls it at
// start for its state directory (depth 2: sessions/<id>/), and
// Project.EnsureStateDir does it for a project's .sessiond.
func RemoveStaleTemps(dir string, depth int) ([]string, error) {
	fd, err := openat(unix.AT_FDCWD, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open directory", Path: dir, Err: err}
	}
	return removeStaleTempsAt(fd, dir, depth, time.Now().Add(-StaleTempAge))
}

// removeStaleTempsAt is RemoveStaleTemps on the directory fd, which it
// closes.
func removeStaleTempsAt(fd int, dir string, depth int, before time.Time) ([]string, error) {
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir() && depth > 0:
			sub, err := openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
			if err != nil {
				errs = append(errs, &fs.PathError{Op: "open directory", Path: filepath.Join(dir, name), Err: err})
				continue
			}
			r, err := removeStaleTempsAt(sub, filepath.Join(dir, name), depth-1, before)
			removed = append(removed, r...)
			if err != nil {
				errs = append(errs, err)
			}
		case e.Type().IsRegular() && isTempName(name):
			info, err := e.Info()
			if err != nil || !info.ModTime().Before(before) {
				continue
			}
			if err := unix.Unlinkat(fd, name, 0); err != nil && err != unix.ENOENT {
				errs = append(errs, &fs.PathError{Op: "remove", Path: filepath.Join(dir, name), Err: err})
				continue
			}
			removed = append(removed, filepath.Join(dir, name))
		}
	}
	return removed, errors.Join(errs...)
}

// readUmask reads the process's umask from /proc/self/status (Linux 4.7
// and later); elsewhere ok is false.
func readUmask() (os.FileMode, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "Umask:"); found {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return os.FileMode(m), err == nil
		}
	}
	return 0, false
}

// SyncDir makes the entries of the directory dir durable: a rename or a
// removal in it survives a crash once it returns.
func SyncDir(dir string) error {
	fd, err := openDir(dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return syncDirFD(fd)
}
