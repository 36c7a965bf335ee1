package state

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// replacements are files of one directory replaced together, each as
// writeReusing replaces one durably, with two syncs for all of them where
// each alone makes two: every file's content is written (into its spare,
// or a new temporary file), then the contents are synced at once, then each
// file takes its name, then the directory is synced once. A crash leaves
// each file whole, old or new, as one replacement does.
//
// An end writes its handoff and the project's session state, and releases
// the project's lock, in one such batch: two waits for the disk where the
// files one after the other made five, and over a stop of a thousand
// sessions fewer syncs and an eighth less written back (bench/README.md,
// "The twenty-third pass").
type replacements struct {
	dirfd  int
	items  []*replacement
	retire [][2]string // name, display
	// owed says a name was made in the directory before the batch (a new
	// progress log's), which the batch's sync of the directory is to make
	// durable too: the directory is synced however the batch went, and
	// dirErr is that sync's error.
	owed   bool
	dirErr error
	// fresh says the files are most likely not there yet (a project's
	// first end): a file written into a spare made ahead (empty) takes its
	// name without first trying an exchange, which would fail.
	fresh bool
}

type replacement struct {
	fd            int // the content's file, open until the contents are synced
	from, name    string
	display       string
	temp, swapped bool
	// first: from is a spare made ahead, and the batch is fresh.
	first bool
	err   error
}

// add writes data (mode perm) as the next content of name, shown as
// display; the error, also returned by commit, is this file's alone.
// Where names cannot be exchanged it is a replacement of its own, made now.
func (r *replacements) add(name, display string, data []byte, perm os.FileMode) error {
	it := &replacement{fd: -1, name: name, display: display}
	r.items = append(r.items, it)
	if !canExchange {
		it.err = writeAtWith(r.dirfd, name, display, data, perm, durable)
		return it.err
	}
	if err := pendingSyncs.wait(display); err != nil {
		it.err = fmt.Errorf("write %s: the write before it was not synced: %w", display, err)
		return it.err
	}
	spare := "." + name + spareMark
	fd, err := openat(r.dirfd, spare, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	var st unix.Stat_t
	if err == nil && (unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1) {
		// Not a spare of ours (a directory, a link): out of the way.
		unix.Close(fd)
		_ = unix.Unlinkat(r.dirfd, spare, 0)
		err = unix.ENOENT
	}
	if err == nil {
		it.fd, it.from, it.first = fd, spare, r.fresh && st.Size == 0
		err = fillFile(fd, data, perm, os.FileMode(st.Mode&0o7777), st.Size > int64(len(data)))
	} else {
		it.temp = true
		if it.from, it.fd, err = createTemp(r.dirfd, name); err == nil {
			err = fillFile(it.fd, data, perm, tempMode(), false)
		}
	}
	if err != nil {
		it.err = fmt.Errorf("write %s: %w", display, err)
		r.drop(it)
	}
	return it.err
}

// retireOnCommit takes name away for readers (retireAt) with the names'
// change, once every file added has taken its name.
func (r *replacements) retireOnCommit(name, display string) {
	r.retire = append(r.retire, [2]string{name, display})
}

// drop gives up it: its file closed, and removed (a spare written over is
// no longer one).
func (r *replacements) drop(it *replacement) {
	if it.fd >= 0 {
		unix.Close(it.fd)
		it.fd = -1
	}
	if it.from != "" {
		_ = unix.Unlinkat(r.dirfd, it.from, 0)
		it.from = ""
	}
}

// commit syncs the contents added, gives each its name, retires what was
// to be retired if every file took its name, and syncs the directory. It
// returns each file's error in the order added, and the retirement's.
func (r *replacements) commit() (errs []error, retired error) {
	var fds []int
	for _, it := range r.items {
		if it.fd >= 0 {
			fds = append(fds, it.fd)
		}
	}
	var serr error
	if len(fds) > 0 {
		if serr = syncFiles(fds); serr != nil {
			serr = fmt.Errorf("fsync: %w", serr)
		}
	}
	renamed := false
	for _, it := range r.items {
		if it.fd < 0 {
			continue
		}
		err := unix.Close(it.fd)
		it.fd = -1
		if err == nil {
			err = serr
		}
		if err != nil {
			it.err = fmt.Errorf("write %s: %w", it.display, err)
			r.drop(it)
			continue
		}
		swap := exchanged
		if it.first {
			swap = placed
		}
		if it.swapped, err = swap(r.dirfd, it.from, it.name); err != nil {
			it.err = fmt.Errorf("write %s: swap into place: %w", it.display, err)
			r.drop(it)
			continue
		}
		renamed = true
		if it.temp && it.swapped {
			// The temporary file holds what name held: the next write's
			// spare (a crash before leaves a temporary file, which the
			// next start removes).
			if err := unix.Renameat(r.dirfd, it.from, r.dirfd, "."+it.name+spareMark); err != nil {
				_ = unix.Unlinkat(r.dirfd, it.from, 0)
			}
		}
	}
	for _, it := range r.items {
		errs = append(errs, it.err)
	}
	if len(r.retire) > 0 {
		if err := errors.Join(errs...); err != nil {
			retired = fmt.Errorf("not released: %w", err)
		} else {
			for _, n := range r.retire {
				if err := retireUnsynced(r.dirfd, n[0], n[1]); err != nil {
					retired = errors.Join(retired, err)
				} else {
					renamed = true
				}
			}
		}
	}
	if renamed || r.owed {
		if err := syncDirFD(r.dirfd); err != nil {
			r.dirErr = err
			for i, it := range r.items {
				if it.err == nil {
					errs[i] = fmt.Errorf("write %s: %w", it.display, err)
				}
			}
			retired = errors.Join(retired, err)
		}
	}
	return errs, retired
}
