package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/daemon/state"
	"go.uber.org/zap"
)

// fsTimeSlack covers the coarse clock file systems stamp times with (up to a
// jiffy behind the wall clock), so that a change made right at a scan's
// starting time is not missed.
const fsTimeSlack = 20 * time.Millisecond

type scanMode int

const (
	scanQuiet   scanMode = iota // find and watch directories; report no file
	scanCreated                 // the tree is new: every file in it changed
	scanSince                   // report the files changed since a time
)

var errAborted = errors.New("watch closed during a scan")

// scan walks the directory rel (which is not ignored), level by level so that
// git is asked about each level in one batch. It watches every directory that
// is not ignored (or polls it when an inotify limit is hit), reports files as
// mode says, and with prune forgets the directories under rel that it no
// longer finds. Symlinks are never followed. Only a failure on rel itself is
// returned; the others are logged and skipped.
// scan lists and watches the tree at rel with the project user's rights:
// the kernel refuses, as it would refuse the user, a directory swapped for
// a symlink to one the user cannot read.
func (w *Watch) scan(rel string, mode scanMode, since time.Time, prune bool) error {
	var err error
	_ = state.FilesOf(w.opt.User).Do(func() error {
		err = w.scanTree(rel, mode, since, prune)
		return nil
	})
	return err
}

func (w *Watch) scanTree(rel string, mode scanMode, since time.Time, prune bool) error {
	var seen map[string]struct{}
	if prune {
		seen = make(map[string]struct{})
		// Forget first the directories that went or were replaced: a moved
		// directory is the same inode under its new name, which inotify
		// gives the same watch, so dropping the old name's watch after the
		// new one is added would drop both.
		gone := make(map[string]struct{})
		for d, id := range w.dirs {
			if isUnder(d, rel) && d != rel {
				if now, ok := lstatDir(w.abs(d)); !ok || now != id {
					gone[d] = struct{}{}
				}
			}
		}
		if len(gone) > 0 {
			w.unwatchTrees(gone)
			w.smu.Lock()
			for d := range gone {
				w.note(d)
			}
			w.smu.Unlock()
		}
	}
	now := time.Now()
	var files []change
	var leftOut []string // left-out directories met: in the record, not the stats
	level := []string{rel}
	for len(level) > 0 {
		if w.quitting() {
			return errAborted
		}
		var (
			cands []string
			chg   []change // for the files among cands; dirs have rel == ""
		)
		for _, d := range level {
			entries, err := w.enter(d)
			if err != nil {
				if d == rel {
					return err
				}
				continue
			}
			if prune {
				seen[d] = struct{}{}
			}
			// In a left-out directory (listed for the tracked files it
			// holds), only those and their directories count.
			lo := w.leftOutDir(d, true)
			for _, e := range entries {
				name := e.Name()
				switch name {
				case ".git":
					w.ign.addDomain(d)
					continue
				case ".sessiond":
					continue
				}
				child := joinRel(d, name)
				if lo != "" && !w.ign.keeps(lo, child) {
					continue
				}
				if e.IsDir() {
					if lo == "" && w.leaveOut[name] && !w.ign.keeps(child, child) {
						if mode != scanQuiet {
							leftOut = append(leftOut, child)
						}
						continue
					}
					cands = append(cands, child)
					chg = append(chg, change{})
					continue
				}
				switch mode {
				case scanCreated:
					cands = append(cands, child)
					chg = append(chg, change{rel: child, t: now, exists: true})
				case scanSince:
					info, err := e.Info()
					if err != nil {
						continue // gone since it was listed
					}
					if t := changeTime(info); !t.Before(since) {
						cands = append(cands, child)
						chg = append(chg, change{rel: child, t: t, exists: true})
					}
				}
			}
		}
		ignored := w.ign.ignored(cands)
		level = level[:0:0]
		for i, c := range cands {
			switch {
			case ignored[i]:
			case chg[i].rel == "":
				level = append(level, c)
			default:
				files = append(files, chg[i])
			}
		}
	}
	w.record(files)
	if len(leftOut) > 0 {
		w.smu.Lock()
		w.note(leftOut...)
		w.smu.Unlock()
	}
	if prune {
		var gone []string
		for d := range w.dirs {
			if _, ok := seen[d]; !ok && isUnder(d, rel) {
				w.unwatch(d)
				gone = append(gone, d)
			}
		}
		for d := range w.polled {
			if _, ok := seen[d]; !ok && isUnder(d, rel) {
				w.unwatch(d)
				gone = append(gone, d)
			}
		}
		if len(gone) > 0 {
			w.smu.Lock()
			w.note(gone...)
			w.smu.Unlock()
		}
	}
	w.syncCounts()
	return nil
}

// enter watches directory d (or, past an inotify limit, puts it among the
// polled ones) and lists it.
func (w *Watch) enter(d string) ([]fs.DirEntry, error) {
	abs := w.abs(d)
	id, watched := w.dirs[d]
	_, polled := w.polled[d]
	now, isDir := lstatDir(abs)
	if watched && (!isDir || now != id) {
		// Another directory now has this name: the watches are on the old one.
		w.unwatchTrees(map[string]struct{}{d: {}})
		w.smu.Lock()
		w.note(d)
		w.smu.Unlock()
		watched = false
	}
	if !watched {
		err := w.hub.watchDir(abs, w)
		switch {
		case err == nil:
			w.dirs[d] = now
			delete(w.polled, d)
			polled = false
		case isLimit(err):
			if !polled {
				setIn(&w.polled, d, nil) // its names are filled in below
				polled = true
				w.markLost("an inotify limit was reached")
				if !w.degradedLogged {
					w.degradedLogged = true
					w.logger().Warn("inotify limit reached; directories past it are rescanned periodically instead of watched",
						zap.Duration("every", w.opt.Rescan), zap.Error(err), zap.String("fix", limitAdvice(err)))
				}
			}
		case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return nil, fmt.Errorf("watch %s: %w", abs, err) // gone meanwhile
		default:
			w.logger().Warn("cannot watch directory; skipping it and what is under it",
				zap.String("dir", d), zap.Error(err))
			setIn(&w.skipped, d, struct{}{})
			w.markLost("a directory could not be watched")
			return nil, fmt.Errorf("watch %s: %w", abs, err)
		}
	}
	entries, err := w.hub.readDir(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			w.unwatch(d)
		} else {
			w.logger().Warn("cannot list directory; what is under it is not watched",
				zap.String("dir", d), zap.Error(err))
			setIn(&w.skipped, d, struct{}{})
			w.markLost("a directory could not be listed")
		}
		return nil, fmt.Errorf("list %s: %w", abs, err)
	}
	delete(w.skipped, d)
	if polled {
		w.polled[d] = names(entries)
	}
	return entries, nil
}

// dirID tells directories apart: a name can be taken by another one.
type dirID struct{ dev, ino uint64 }

// lstatDir returns the id of the directory at abs, and whether there is one.
func lstatDir(abs string) (dirID, bool) {
	fi, err := os.Lstat(abs)
	if err != nil || !fi.IsDir() {
		return dirID{}, false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return dirID{dev: uint64(st.Dev), ino: st.Ino}, true
	}
	return dirID{}, true
}

func names(entries []fs.DirEntry) map[string]struct{} {
	m := make(map[string]struct{}, len(entries))
	for _, e := range entries {
		m[e.Name()] = struct{}{}
	}
	return m
}

// changeTime is the later of a file's modification and status change times:
// a rename or a copy that keeps the mtime still moves the ctime.
func changeTime(info fs.FileInfo) time.Time {
	t := info.ModTime()
	if c := statusChangeTime(info); c.After(t) {
		t = c
	}
	return t
}

// poll is the degraded-mode rescan of the directories that could not be
// watched: it compares each one's entries with the last rescan's (new and
// removed names) and the files' times with the last rescan's time. It also
// tries to watch them again, in case the limit was raised or watches freed.
func (w *Watch) poll() {
	_ = state.FilesOf(w.opt.User).Do(func() error {
		w.pollDirs()
		return nil
	})
}

// pollDirs is poll with the project user's rights.
func (w *Watch) pollDirs() {
	since := w.lastPoll.Add(-fsTimeSlack)
	w.lastPoll = time.Now()
	dirs := make([]string, 0, len(w.polled))
	for d := range w.polled {
		dirs = append(dirs, d)
	}
	var (
		cands   []string
		chg     []change
		removed = make(map[string]struct{})
	)
	for _, d := range dirs {
		before := w.polled[d]
		abs := w.abs(d)
		if err := w.hub.watchDir(abs, w); err == nil {
			w.dirs[d], _ = lstatDir(abs)
			delete(w.polled, d)
			w.logger().Info("directory watched again after the inotify limit", zap.String("dir", d))
		}
		entries, err := w.hub.readDir(abs)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				removed[d] = struct{}{}
			} else {
				w.logger().Warn("cannot list directory", zap.String("dir", d), zap.Error(err))
			}
			continue
		}
		now := names(entries)
		lo := w.leftOutDir(d, true)
		for _, e := range entries {
			name := e.Name()
			if name == ".git" {
				w.ign.addDomain(d)
				continue
			}
			if name == ".sessiond" {
				continue
			}
			child := joinRel(d, name)
			if lo != "" && !w.ign.keeps(lo, child) {
				continue
			}
			if e.IsDir() {
				if lo == "" && w.leaveOut[name] && !w.ign.keeps(child, child) {
					continue
				}
				_, isWatched := w.dirs[child]
				_, isPolled := w.polled[child]
				if !isWatched && !isPolled {
					cands = append(cands, child)
					chg = append(chg, change{})
				}
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			_, known := before[name]
			if t := changeTime(info); !t.Before(since) || !known {
				cands = append(cands, child)
				chg = append(chg, change{rel: child, t: t, exists: true})
			}
		}
		for name := range before {
			if _, ok := now[name]; ok {
				continue
			}
			child := joinRel(d, name)
			if lo != "" && !w.ign.keeps(lo, child) {
				continue
			}
			_, isWatched := w.dirs[child]
			_, isPolled := w.polled[child]
			if isWatched || isPolled {
				removed[child] = struct{}{}
				continue
			}
			cands = append(cands, child)
			chg = append(chg, change{rel: child, t: w.lastPoll})
		}
		if _, ok := w.polled[d]; ok {
			w.polled[d] = now
		}
	}
	if len(removed) > 0 {
		w.unwatchTrees(removed)
		w.smu.Lock()
		for d := range removed {
			w.note(d)
		}
		w.smu.Unlock()
	}
	for _, c := range cands {
		if path.Base(c) == ".gitignore" {
			w.ign.stop() // git caches ignore files
			break
		}
	}
	ignored := w.ign.ignored(cands)
	var files []change
	var newDirs []string
	for i, c := range cands {
		switch {
		case ignored[i]:
		case chg[i].rel == "":
			newDirs = append(newDirs, c)
		default:
			files = append(files, chg[i])
		}
	}
	w.record(files)
	if len(newDirs) > 0 {
		w.smu.Lock()
		w.note(newDirs...)
		w.smu.Unlock()
	}
	for _, d := range newDirs {
		if _, ok := w.dirs[d]; ok {
			continue
		}
		if _, ok := w.polled[d]; ok {
			continue
		}
		_ = w.scan(d, scanCreated, time.Time{}, false)
	}
	// What the rescans find comes up to Rescan late: a mark taken before
	// this one may have missed it.
	w.markLost("directories are rescanned periodically instead of watched (inotify limit)")
	w.syncCounts()
}
