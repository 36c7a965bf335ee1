package state

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Limits of one progress log entry.
const (
	maxProgressItems   = 50
	maxProgressItemLen = 500
)

// ProgressEntry is one session's entry in the progress log.
type ProgressEntry struct {
	Time      time.Time
	SessionID string
	EndReason string
	Completed []string
	// InProgress is work started and not finished.
	InProgress []string
	Blocked    []string
	// Resolved are the blockers resolved in the session.
	Resolved []string
	Notes    []string
	// NextSteps is what the next session should do, in order.
	NextSteps []string
}

// progressHeader starts a progress log that sessiond creates.
const progressHeader = "# Progress\n\nOne entry per session, appended by sessiond when the session ends.\n\n---\n"

// AppendProgress appends e to the project's markdown progress log rel
// ("" means .sessiond/progress.md; otherwise a path relative to the
// project, confined to it) with the owner's rights, and returns the
// session number N of the new entry. The entry has the seed's shape
// ("## Session N - 2006-01-02 15:04", then ### Completed, ### In Progress,
// ### Blocked, ### Notes and ### Next Session Should, each only when it has
// items, and a closing "---"); N is one more than the number of
// "## Session " headings already in the file, or than the highest session
// number among them if a hand-kept log numbers higher. Every text from e is
// escaped and kept on one line (see inline), so that no field can forge the
// log's structure or reach a terminal raw.
//
// A new file starts with a short header and gets mode 0600; an existing
// one, sessiond's or written by hand, keeps its mode and every byte of its
// content. A log that is a symlink is written through to its target as
// long as that stays inside the project; one that leaves it is refused
// (ErrOutsideProject). A log in .sessiond gets that directory created;
// any other log's directory must exist. The log is read as an input (a
// regular file of at most MaxProgressSize bytes).
//
// The log is only appended to (see appendEntriesAt): entries of ends that
// happen together are all kept, each once, in the order they are written.
func (p *Project) AppendProgress(rel string, e ProgressEntry) (n int, err error) {
	ns, err := p.appendProgress(rel, []ProgressEntry{e}, nil)
	if err != nil {
		return 0, err
	}
	return ns[0], nil
}

// appendProgress is AppendProgress for several entries, in order, in one
// write. A log it makes (its first entry) in .sessiond itself takes its
// name there without the directory's sync when owed is not nil: *owed is
// set, and the caller syncs .sessiond (writeAccounts, with the handoff's
// and the state's names).
func (p *Project) appendProgress(rel string, es []ProgressEntry, owed *bool) (ns []int, err error) {
	if rel == "" {
		rel = DirName + "/" + ProgressFile
	}
	if filepath.Dir(filepath.Clean(rel)) != DirName {
		owed = nil
	}
	err = p.do(func(root int) error {
		if first, _, _ := strings.Cut(filepath.ToSlash(filepath.Clean(rel)), "/"); first == DirName {
			if err := p.withStateDir(root, true, func(int) error { return nil }); err != nil {
				return err
			}
		}
		dfd, name, display, err := p.resolveForWrite(root, rel)
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		ns, err = appendEntriesOwing(dfd, name, display, es, owed)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append progress: %w", err)
	}
	return ns, nil
}

// AppendProgress appends e to the progress log at path with the caller's
// own rights, as Project.AppendProgress does, except that path is any path:
// a symlinked log is written through the link wherever it points. A log in
// a project's .sessiond (ProgressPath) gets that directory through
// ProjectDir; any other log's directory must exist.
func AppendProgress(path string, e ProgressEntry) (n int, err error) {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	} else if filepath.Base(filepath.Dir(path)) == DirName {
		if err := ensureParent(path); err != nil {
			return 0, fmt.Errorf("append progress: %w", err)
		}
	}
	dfd, err := openDir(filepath.Dir(path))
	if err != nil {
		return 0, fmt.Errorf("append progress: %w", err)
	}
	defer unix.Close(dfd)
	n, err = appendProgressAt(dfd, filepath.Base(path), path, e)
	if err != nil {
		return 0, fmt.Errorf("append progress: %w", err)
	}
	return n, nil
}

// appendProgressAt appends e to the log name in dirfd (not following a
// symlink there: the caller resolved it).
func appendProgressAt(dirfd int, name, display string, e ProgressEntry) (int, error) {
	ns, err := appendEntriesAt(dirfd, name, display, []ProgressEntry{e})
	if err != nil {
		return 0, err
	}
	return ns[0], nil
}

// appendEntriesAt appends es to the log name in dirfd, in order, and
// returns their session numbers. The log is only ever appended to: opened
// with O_APPEND and locked (flock) while it is read for its numbering and
// the entries are written in one write and synced, so that concurrent ends
// — of this daemon or another — each add their entry and none is lost. An
// entry already there (an end that ran twice: a daemon that died in the
// middle of it, then the next one) is not written again. A log that would
// grow past MaxProgressSize is first rotated whole to NAME.1 (replacing an
// older one), the numbering going on in the new log.
func appendEntriesAt(dirfd int, name, display string, es []ProgressEntry) ([]int, error) {
	return appendEntriesOwing(dirfd, name, display, es, nil)
}

// appendEntriesOwing is appendEntriesAt whose new log's name, if owed is
// not nil, is left for the caller to sync with dirfd (*owed set).
func appendEntriesOwing(dirfd int, name, display string, es []ProgressEntry, owed *bool) ([]int, error) {
	for {
		ns, retry, err := appendEntriesOnce(dirfd, name, display, es, owed)
		if !retry {
			return ns, err
		}
	}
}

// appendEntriesOnce is one try of appendEntriesOwing; retry says the log
// was rotated or replaced while it waited for the lock.
func appendEntriesOnce(dirfd int, name, display string, es []ProgressEntry, owed *bool) (ns []int, retry bool, err error) {
	// What is there is looked at before it is opened: a FIFO or a device
	// is named as such, not opened for writing.
	var pre unix.Stat_t
	switch err := fstatat(dirfd, name, &pre, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && pre.Mode&unix.S_IFMT != unix.S_IFREG:
		if pre.Mode&unix.S_IFMT == unix.S_IFLNK {
			return nil, false, fmt.Errorf("refused: %s is a symlink: %w", display, ErrFileType)
		}
		return nil, false, notRegular(display, uint32(pre.Mode))
	case err == unix.ENOENT:
		if ns, made, err := createFromSpare(dirfd, name, display, es, owed); made || err != nil {
			return ns, false, err
		}
	}
	fd, err := openat(dirfd, name, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0o600)
	replace := false
	if err == unix.EACCES {
		// A log the user may not write, in a directory the user may: it
		// is replaced by the user's own, with its content, as the
		// directory's owner could.
		fd, err = openat(dirfd, name, inputFlags|unix.O_NOFOLLOW, 0)
		replace = true
	}
	if err != nil {
		return nil, false, openError(dirfd, name, display, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, fmt.Errorf("stat %s: %w", display, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false, notRegular(display, uint32(st.Mode))
	}
	if err := flock(fd); err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", display, err)
	}
	// The name may have moved on to a new log while this one waited.
	var now unix.Stat_t
	if fstatat(dirfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Ino != st.Ino || now.Dev != st.Dev {
		return nil, true, nil
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, fmt.Errorf("stat %s: %w", display, err)
	}
	old, err := preadAll(fd, min(st.Size, MaxProgressSize+1))
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", display, err)
	}
	created := len(old) == 0
	b, ns, wrote := entriesAfter(old, es)
	if !wrote {
		return ns, false, nil
	}
	if replace {
		data := append(old, b.Bytes()...)
		if err := writeAt(dirfd, name, display, data, os.FileMode(st.Mode&0o777)); err != nil {
			return nil, false, err
		}
		return ns, false, nil
	}
	if int64(len(old))+int64(b.Len()) > MaxProgressSize && !created {
		return ns, false, rotateProgress(dirfd, name, display, uint32(st.Mode&0o777), b.Bytes()[bytes.Index(b.Bytes(), []byte("\n## Session ")):])
	}
	if err := appendDurably(fd, int64(len(old)), b.Bytes()); err != nil {
		return nil, false, fmt.Errorf("append to %s: %w", display, err)
	}
	if created {
		if err := syncNameOrOwe(dirfd, owed); err != nil {
			return nil, false, fmt.Errorf("append to %s: %w", display, err)
		}
	}
	return ns, false, nil
}

// syncNameOrOwe syncs dirfd, where a new name was made, unless owed takes
// the sync on (owed not nil: *owed is set).
func syncNameOrOwe(dirfd int, owed *bool) error {
	if owed != nil {
		*owed = true
		return nil
	}
	return syncDirFD(dirfd)
}

// entriesAfter is what appending es to the log old adds (a new log's
// header first), with the entries' session numbers; an entry whose
// session is in old already, or earlier in es, is not added again and
// gets that entry's number. wrote says whether anything is added.
func entriesAfter(old []byte, es []ProgressEntry) (b *bytes.Buffer, ns []int, wrote bool) {
	b = new(bytes.Buffer)
	if len(old) == 0 {
		b.WriteString(progressHeader)
	} else {
		if old[len(old)-1] != '\n' {
			b.WriteByte('\n')
		}
		if !endsWithRule(old) {
			b.WriteString("\n---\n")
		}
	}
	count := countSessions(old)
	seen := map[string]int{}
	ns = make([]int, len(es))
	for i, e := range es {
		if n, ok := entryOf(old, e.SessionID); ok {
			ns[i] = n
			continue
		}
		if n, ok := seen[e.SessionID]; ok && e.SessionID != "" {
			ns[i] = n
			continue
		}
		count++
		ns[i], seen[e.SessionID] = count, count
		b.WriteByte('\n')
		writeEntry(b, count, e)
		wrote = true
	}
	return b, ns, wrote
}

// createFromSpare makes the log name, which is not there, out of its spare
// (.NAME.spare, made ahead by Project.PrepareEnd): the new log's header
// and es are written into it and synced, and it takes the name unless a
// log took it meanwhile. So the first entry of a project's log makes no
// inode at the end of its session. made is false, with no error, when
// there is no spare to use or a log came first: the caller appends as
// for any log. The spare is locked (flock) while it is written, as the log
// is: of two writers that found it, the second finds it gone. The name's
// sync is owed's when owed is not nil (syncNameOrOwe).
func createFromSpare(dirfd int, name, display string, es []ProgressEntry, owed *bool) (ns []int, made bool, err error) {
	if !canExchange {
		return nil, false, nil
	}
	spare := SpareName(name)
	fd, err := openat(dirfd, spare, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, false, nil
	}
	defer unix.Close(fd)
	var st, now unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || flock(fd) != nil {
		return nil, false, nil
	}
	if fstatat(dirfd, spare, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Ino != st.Ino || now.Dev != st.Dev {
		return nil, false, nil // used by another writer while this one waited
	}
	b, ns, _ := entriesAfter(nil, es)
	// Written and synced with the lock held (finishFile would close it).
	err = writeAll(fd, b.Bytes())
	if err == nil && st.Size > int64(b.Len()) {
		err = unix.Ftruncate(fd, int64(b.Len()))
	}
	if err == nil && st.Mode&0o7777 != 0o600 {
		err = unix.Fchmod(fd, 0o600)
	}
	if err == nil {
		err = syncFile(fd)
	}
	if err != nil {
		return nil, false, fmt.Errorf("append to %s: %w", display, err)
	}
	switch err := renameNoReplace(dirfd, spare, name); err {
	case nil:
	case unix.EEXIST:
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("append to %s: %w", display, err)
	}
	if err := syncNameOrOwe(dirfd, owed); err != nil {
		return nil, false, fmt.Errorf("append to %s: %w", display, err)
	}
	return ns, true, nil
}

// rotateProgress moves the full log name to NAME.1 and starts a new one
// with entries, held by the lock on the old one.
func rotateProgress(dirfd int, name, display string, perm uint32, entries []byte) error {
	if err := unix.Renameat(dirfd, name, dirfd, name+".1"); err != nil {
		return fmt.Errorf("rotate %s: %w", display, err)
	}
	var b bytes.Buffer
	b.WriteString(progressHeader)
	fmt.Fprintf(&b, "\nEarlier entries are in %s.1.\n\n---\n", filepath.Base(display))
	b.Write(entries)
	if err := writeAt(dirfd, name, display, b.Bytes(), os.FileMode(perm)); err != nil {
		return fmt.Errorf("rotate %s: %w", display, err)
	}
	return nil
}

// appendDurably writes data at the end of fd (opened O_APPEND, of size
// size) in one write and syncs it, in its file system's group (the ends
// of many projects' sessions append at once); a write cut short is taken
// back, so the log never keeps half an entry.
func appendDurably(fd int, size int64, data []byte) error {
	n, err := unix.Write(fd, data)
	if err == nil && n < len(data) {
		err = unix.ENOSPC
	}
	if err == nil {
		err = syncFile(fd)
	}
	if err != nil {
		_ = unix.Ftruncate(fd, size)
		return err
	}
	return nil
}

// preadAll reads the first n bytes of fd.
func preadAll(fd int, n int64) ([]byte, error) {
	buf := make([]byte, n)
	off := 0
	for off < len(buf) {
		m, err := unix.Pread(fd, buf[off:], int64(off))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, err
		case m == 0:
			return buf[:off], nil
		}
		off += m
	}
	return buf, nil
}

// flock takes fd's exclusive lock, waiting for it.
func flock(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

// entryOf finds the entry of session id (its "Session ID, ended: ..."
// line) and returns its number, counting the entries up to it.
func entryOf(data []byte, id string) (int, bool) {
	if id == "" {
		return 0, false
	}
	marker := []byte("Session " + oneLine(truncate(id, maxIDLen)))
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("## Session ")) {
			n++
			continue
		}
		if rest, ok := bytes.CutPrefix(line, marker); ok && (len(rest) == 0 || rest[0] == ',') {
			return n, true
		}
	}
	return 0, false
}

// countSessions counts the lines that start with "## Session ", or returns
// the highest number among them if that is more: a hand-kept log may have
// been numbered from elsewhere ("## Session 5" as its only entry).
func countSessions(data []byte) int {
	count, highest := 0, 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("## Session "))
		if !ok {
			continue
		}
		count++
		end := 0
		for end < len(rest) && end < 9 && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		if n, err := strconv.Atoi(string(rest[:end])); err == nil {
			highest = max(highest, n)
		}
	}
	return max(count, highest)
}

// endsWithRule reports whether the last non-blank line is "---" (or there is
// no content at all), so that an entry is not preceded by a second rule.
func endsWithRule(data []byte) bool {
	t := bytes.TrimRight(data, " \t\r\n")
	if len(t) == 0 {
		return true
	}
	last := t[bytes.LastIndexByte(t, '\n')+1:]
	return string(bytes.TrimSpace(last)) == "---"
}

func writeEntry(b *bytes.Buffer, n int, e ProgressEntry) {
	fmt.Fprintf(b, "## Session %d - %s\n", n, e.Time.Format("2006-01-02 15:04"))
	if e.SessionID != "" || e.EndReason != "" {
		b.WriteByte('\n')
		var parts []string
		if e.SessionID != "" {
			parts = append(parts, "Session "+inline(truncate(e.SessionID, maxIDLen)))
		}
		if e.EndReason != "" {
			parts = append(parts, "ended: "+inline(truncate(e.EndReason, maxIDLen)))
		}
		b.WriteString(strings.Join(parts, ", ") + "\n")
	}
	section := func(title string, items []string, bullet func(i int) string) {
		items = boundList(items, maxProgressItems, maxProgressItemLen)
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(b, "\n### %s\n", title)
		for i, it := range items {
			b.WriteString(bullet(i) + inline(it) + "\n")
		}
	}
	dash := func(int) string { return "- " }
	section("Completed", e.Completed, func(int) string { return "- [x] " })
	section("In Progress", e.InProgress, func(int) string { return "- [ ] " })
	section("Blocked", e.Blocked, dash)
	section("Resolved", e.Resolved, dash)
	section("Notes", e.Notes, dash)
	section("Next Session Should", e.NextSteps, func(i int) string { return fmt.Sprintf("%d. ", i+1) })
	b.WriteString("\n---\n")
}
