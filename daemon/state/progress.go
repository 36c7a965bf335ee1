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
	Notes      []string
	// NextSteps is what the next session should do, in order.
	NextSteps []string
}

// progressHeader starts a progress log that sessiond creates.
const progressHeader = "# Progress\n\nOne entry per session, appended by sessiond when the session ends.\n\n---\n"

// AppendProgress appends e to the markdown progress log at path in the
// seed's shape ("## Session N - 2006-01-02 15:04", then ### Completed,
// ### In Progress, ### Blocked, ### Notes and ### Next Session Should, each
// only when it has items, and a closing "---"), and returns N: one more than
// the number of "## Session " headings already in the file, or than the
// highest session number among them if a hand-kept log numbers higher.
// A new file starts with a short header and gets mode 0600; an existing
// one, sessiond's or written by hand, keeps its mode and every byte of its
// content. A symlinked log is written through the link. A log in a
// project's .sessiond (ProgressPath) gets that directory through ProjectDir;
// any other log's directory must exist.
//
// The whole file is rewritten atomically (WriteFile) rather than opened with
// O_APPEND: the log is small, and a crash can then never leave half an entry
// behind, only the old log or the new one.
func AppendProgress(path string, e ProgressEntry) (n int, err error) {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	perm := os.FileMode(0o600)
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		if fi, err := os.Stat(path); err == nil {
			perm = fi.Mode().Perm()
		}
	case errors.Is(err, fs.ErrNotExist):
		old = []byte(progressHeader)
		if filepath.Base(filepath.Dir(path)) == DirName {
			if err := ensureParent(path); err != nil {
				return 0, fmt.Errorf("append progress: %w", err)
			}
		}
	default:
		return 0, fmt.Errorf("append progress: %w", err)
	}
	n = countSessions(old) + 1

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
	if err := WriteFile(path, b.Bytes(), perm); err != nil {
		return 0, fmt.Errorf("append progress: %w", err)
	}
	return n, nil
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
			parts = append(parts, "Session "+oneLine(truncate(e.SessionID, maxIDLen)))
		}
		if e.EndReason != "" {
			parts = append(parts, "ended: "+oneLine(truncate(e.EndReason, maxIDLen)))
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
			b.WriteString(bullet(i) + oneLine(it) + "\n")
		}
	}
	dash := func(int) string { return "- " }
	section("Completed", e.Completed, func(int) string { return "- [x] " })
	section("In Progress", e.InProgress, func(int) string { return "- [ ] " })
	section("Blocked", e.Blocked, dash)
	section("Notes", e.Notes, dash)
	section("Next Session Should", e.NextSteps, func(i int) string { return fmt.Sprintf("%d. ", i+1) })
	b.WriteString("\n---\n")
}
