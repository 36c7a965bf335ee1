package state

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SpareDirs are directories made ahead of need in a parent directory,
// each holding the same empty files, for a start to take whole with one
// rename. Making a file is the dearest step of a start on ext4 (it looks
// for a free inode past every one freed lately: bench/README.md, issue
// 31); a session's directory and its files (the record and its spare,
// the environment, the log, the log's stamps) were five of them before
// the start was answered. A spare is made in the background once one is
// taken, without syncs: the rename that takes it and the syncs of what is
// written into it make it durable, and a crash of the machine leaves at
// worst a spare that the next daemon removes.
type SpareDirs struct {
	parent string
	files  []string
	want   int

	mu       sync.Mutex
	ready    []string
	filling  bool
	closed   bool
	lastTake time.Time
	wg       sync.WaitGroup
	// onFail is told why a spare could not be made (nil: no one).
	onFail func(error)
}

// SpareDirPrefix begins the name of a spare: readers of the parent skip
// such entries.
const SpareDirPrefix = ".spare-"

// IsSpareDir reports whether name, an entry of a parent of spares, is one.
func IsSpareDir(name string) bool { return strings.HasPrefix(name, SpareDirPrefix) }

// NewSpareDirs keeps want spares in parent, each with the empty files
// files (mode 0600). Start adopts an earlier daemon's and fills the rest.
func NewSpareDirs(parent string, want int, onFail func(error), files ...string) *SpareDirs {
	return &SpareDirs{parent: parent, files: files, want: want, onFail: onFail}
}

// Start adopts, in the background, the spares an earlier daemon left that
// are as this one makes them, removes the others, and makes the rest.
func (s *SpareDirs) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filling || s.closed {
		return
	}
	s.filling = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.adopt()
		s.fill()
	}()
}

func (s *SpareDirs) adopt() {
	entries, _ := os.ReadDir(s.parent)
	for _, e := range entries {
		if !IsSpareDir(e.Name()) {
			continue
		}
		s.mu.Lock()
		keep := len(s.ready) < s.want && !s.closed
		s.mu.Unlock()
		if keep && s.asMade(e.Name()) {
			s.mu.Lock()
			s.ready = append(s.ready, e.Name())
			s.mu.Unlock()
			continue
		}
		_ = os.RemoveAll(filepath.Join(s.parent, e.Name()))
	}
}

// asMade reports whether the spare name holds exactly the files a spare
// is made with, each empty, regular, private and the daemon's.
func (s *SpareDirs) asMade(name string) bool {
	dir := filepath.Join(s.parent, name)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != len(s.files) {
		return false
	}
	for _, e := range entries {
		if !slices.Contains(s.files, e.Name()) {
			return false
		}
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
			return false
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() || st.Nlink != 1 {
			return false
		}
	}
	return true
}

// Make makes the directory name in the parent, as EnsureDir would, from a
// spare when one is ready. The directory's entry is durable once synced
// returns nil: a spare's rename is synced in the background meanwhile, so
// that what a start does next (its files, its command) does not wait for
// it; whoever answers the start waits. It refills the spares in the
// background.
func (s *SpareDirs) Make(name string) (synced func() error, err error) {
	s.mu.Lock()
	s.lastTake = time.Now()
	var spare string
	if n := len(s.ready); n > 0 && !s.closed {
		spare = s.ready[n-1]
		s.ready = s.ready[:n-1]
	}
	s.mu.Unlock()
	defer s.refill()
	path := filepath.Join(s.parent, name)
	if spare != "" {
		synced, err := s.take(spare, name)
		switch {
		case err == nil:
			return synced, nil
		case errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY):
			// The directory is there already (a queued session's, made
			// when it was queued): the spare stays one.
			s.putBack(spare)
		default:
			_ = os.RemoveAll(filepath.Join(s.parent, spare))
		}
	}
	return func() error { return nil }, EnsureDir(path)
}

// putBack makes spare, which Make took but did not use, ready again.
func (s *SpareDirs) putBack(spare string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.ready = append(s.ready, spare)
}

// take renames spare to name and syncs the parent in the background; an
// error is a rename that failed (EEXIST: name is there), after which the
// caller makes the directory itself.
func (s *SpareDirs) take(spare, name string) (synced func() error, err error) {
	pfd, err := openDir(s.parent)
	if err != nil {
		return nil, err
	}
	if err := renameDir(pfd, spare, name); err != nil {
		unix.Close(pfd)
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		err := syncDirFD(pfd)
		unix.Close(pfd)
		if err != nil {
			err = fmt.Errorf("create directory %s: %w", filepath.Join(s.parent, name), err)
		}
		done <- err
	}()
	var once sync.Once
	var result error
	return func() error {
		once.Do(func() { result = <-done })
		return result
	}, nil
}

// renameDir renames the directory from to to in dirfd, never over
// anything that is there.
func renameDir(dirfd int, from, to string) error {
	err := renameNoReplace(dirfd, from, to)
	if err == unix.ENOSYS || err == unix.EINVAL {
		// No renameat2 here: a rename over an empty directory would
		// replace it, so look first (nothing else makes these names).
		var st unix.Stat_t
		if unix.Fstatat(dirfd, to, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			return unix.EEXIST
		}
		err = unix.Renameat(dirfd, from, dirfd, to)
	}
	return err
}

// refill makes spares in the background until want are ready.
func (s *SpareDirs) refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filling || s.closed || len(s.ready) >= s.want {
		return
	}
	s.filling = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.fill()
	}()
}

// spareQuiet is how long after a directory was taken the next spare is
// made: between starts one after the other (a few milliseconds apart),
// not in the middle of a burst (a batch's), whose starts would wait
// behind it for the file system, making the same files.
const spareQuiet = 3 * time.Millisecond

// fill makes spares until want are ready; the caller set filling.
func (s *SpareDirs) fill() {
	for {
		s.mu.Lock()
		if s.closed || len(s.ready) >= s.want {
			s.filling = false
			s.mu.Unlock()
			return
		}
		wait := spareQuiet - time.Since(s.lastTake)
		s.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
			continue
		}
		name, err := s.makeSpare()
		s.mu.Lock()
		if err != nil {
			s.filling = false
			s.mu.Unlock()
			if s.onFail != nil {
				s.onFail(err)
			}
			return
		}
		s.ready = append(s.ready, name)
		s.mu.Unlock()
	}
}

// makeSpare makes one spare, nothing synced.
func (s *SpareDirs) makeSpare() (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := SpareDirPrefix + hex.EncodeToString(b[:])
	dir := filepath.Join(s.parent, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("make a spare session directory: %w", err)
	}
	dfd, err := openat(unix.AT_FDCWD, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err == nil {
		err = fchmodIfNot(dfd, 0o700)
		for _, f := range s.files {
			if err != nil {
				break
			}
			var fd int
			if fd, err = openat(dfd, f, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o600); err == nil {
				err = fchmodIfNot(fd, 0o600)
				unix.Close(fd)
			}
		}
		unix.Close(dfd)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("make a spare session directory: %w", &fs.PathError{Op: "create", Path: dir, Err: err})
	}
	return name, nil
}

// fchmodIfNot sets fd's mode to perm unless it is that already (the umask
// may have taken bits away).
func fchmodIfNot(fd int, perm uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if uint32(st.Mode)&0o7777 == perm {
		return nil
	}
	return unix.Fchmod(fd, perm)
}

// Close stops making spares and waits for the one being made.
func (s *SpareDirs) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
}
