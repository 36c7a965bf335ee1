package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
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
// The whole file is rewritten atomically rather than opened with O_APPEND:
// the log is small, and a crash can then never leave half an entry behind,
// only the old log or the new one.
func (p *Project) AppendProgress(rel string, e ProgressEntry) (n int, err error) {
	if rel == "" {
		rel = DirName + "/" + ProgressFile
	}
	err = p.do(func(root int) error {
		if first, _, _ := strings.Cut(filepath.ToSlash(filepath.Clean(rel)), "/"); first == DirName {
			sfd, err := p.stateDir(root, true)
			if err != nil {
				return err
			}
			unix.Close(sfd)
		}
		dfd, name, display, err := p.resolveForWrite(root, rel)
		if err != nil {
			return err
		}
		defer unix.Close(dfd)
		n, err = appendProgressAt(dfd, name, display, e)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("append progress: %w", err)
	}
	return n, nil
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
	perm := os.FileMode(0o600)
	old, mode, err := readAt(dirfd, name, display, MaxProgressSize, true)
	switch {
	case err == nil:
		perm = os.FileMode(mode & 0o777)
	case errors.Is(err, fs.ErrNotExist):
		old = []byte(progressHeader)
	default:
		return 0, err
	}
	if n, ok := entryOf(old, e.SessionID); ok {
		// Written already, by an end that ran twice (a daemon that died in
		// the middle of it, then the next one): one entry per session.
		return n, nil
	}
	n := countSessions(old) + 1
	var b bytes.Buffer
	b.Grow(len(old) + 1024)
	b.Write(old)
	if len(old) > 0 && old[len(old)-1] != '\n' {
		b.WriteByte('\n')
	}
	if !endsWithRule(old) {
		b.WriteString("\n---\n")
	}
	b.WriteByte('\n')
	writeEntry(&b, n, e)
	if err := writeAt(dirfd, name, display, b.Bytes(), perm); err != nil {
		return 0, err
	}
	return n, nil
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
