package checkpoint

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Trailer keys of checkpoint commit messages. They make a checkpoint
// self-describing, so List reads everything from one git log.
const (
	trailerSession  = "Sessiond-Session"
	trailerFiles    = "Sessiond-Files-Changed"
	trailerFile     = "Sessiond-File" // one of the first few files changed
	trailerTurn     = "Sessiond-Turn"
	trailerDepth    = "Sessiond-Depth"
	trailerOldest   = "Sessiond-Oldest" // unix time of the oldest checkpoint of the ref
	trailerFolded   = "Sessiond-Folded" // how many checkpoints were folded into this one
	trailerWas      = "Sessiond-Was"    // an id this checkpoint had before a prune rewrote it
	trailerFoldedID = "Sessiond-Folded-Id"
)

// Bounds of what a message names.
const (
	subjectFiles  = 3    // files named in the subject
	trailerFileN  = 8    // files named in trailers
	maxFoldedIDs  = 5000 // ids of folded checkpoints one checkpoint remembers
	turnLabelSize = 60   // runes of a turn label
	subjectName   = 48   // runes of a file name in the subject
)

// message is a checkpoint commit message: a generated subject, the caller's
// message as body, and a trailer paragraph.
type message struct {
	subject  string
	body     string
	trailers [][2]string
}

// subjectFor is a checkpoint's subject line: what the history of a
// session reads like in `sessionctl checkpoints` and `git log`. It names the
// agent's turn when there is one, and the files changed: the first few and
// a count.
//
//	Checkpoint: 3 files changed: src/a.go, src/b.go, README.md
//	Turn "Add retries to the fetcher": 12 files changed: a.go, b.go, c.go and 9 more
//	WIP checkpoint: 1 file changed: notes.txt
func subjectFor(kind, turn string, files []string, n int) string {
	var b strings.Builder
	if turn != "" {
		if kind == "checkpoint" {
			fmt.Fprintf(&b, "Turn %q", turn)
		} else {
			fmt.Fprintf(&b, "%s after turn %q", kind, turn)
		}
	} else {
		b.WriteString(strings.ToUpper(kind[:1]) + kind[1:])
	}
	b.WriteString(": ")
	switch n {
	case 0:
		b.WriteString("no files changed")
		return b.String()
	case 1:
		b.WriteString("1 file changed")
	default:
		fmt.Fprintf(&b, "%d files changed", n)
	}
	named := 0
	for _, f := range files {
		if named == subjectFiles {
			break
		}
		if named == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(shorten(cleanLine(f), subjectName))
		named++
	}
	if named > 0 && n > named {
		fmt.Fprintf(&b, " and %d more", n-named)
	}
	return b.String()
}

// fileTrailers name the first few files changed, one trailer each.
func fileTrailers(files []string) [][2]string {
	var t [][2]string
	for _, f := range files {
		if len(t) == trailerFileN {
			break
		}
		if c := cleanLine(f); c == f && c != "" {
			t = append(t, [2]string{trailerFile, f})
		}
	}
	return t
}

// TurnLabel is how a checkpoint names an agent's turn: the first non-empty
// line of its prompt, without control characters, shortened to 60
// characters.
func TurnLabel(prompt string) string {
	for line := range strings.SplitSeq(prompt, "\n") {
		if l := strings.Join(strings.Fields(cleanLine(strings.ReplaceAll(line, "\t", " "))), " "); l != "" {
			return shorten(l, turnLabelSize)
		}
	}
	return ""
}

// cleanLine drops control characters (and so newlines).
func cleanLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
}

// shorten cuts s to n runes, ending in "…" when cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

func (m message) String() string {
	var b strings.Builder
	b.WriteString(m.subject)
	b.WriteString("\n")
	if m.body != "" {
		b.WriteString("\n")
		body := m.body
		if len(m.trailers) == 0 {
			// Its last paragraph would be read back as trailers: a body
			// cannot pass for the daemon's own.
			body = strings.ReplaceAll("\n"+body, "\nSessiond-", "\n Sessiond-")[1:]
		}
		b.WriteString(body)
		b.WriteString("\n")
	}
	if len(m.trailers) > 0 {
		b.WriteString("\n")
		for _, t := range m.trailers {
			b.WriteString(t[0] + ": " + t[1] + "\n")
		}
	}
	return b.String()
}

// get returns the last value of trailer key, or "".
func (m message) get(key string) string {
	v := ""
	for _, t := range m.trailers {
		if t[0] == key {
			v = t[1]
		}
	}
	return v
}

func (m message) getInt(key string) int {
	n, _ := strconv.Atoi(m.get(key))
	return n
}

func (m message) all(key string) []string {
	var vs []string
	for _, t := range m.trailers {
		if t[0] == key {
			vs = append(vs, t[1])
		}
	}
	return vs
}

// set replaces every value of key with v (appending it if absent).
func (m *message) set(key, v string) {
	out := m.trailers[:0:0]
	done := false
	for _, t := range m.trailers {
		if t[0] == key {
			if !done {
				out = append(out, [2]string{key, v})
				done = true
			}
			continue
		}
		out = append(out, t)
	}
	if !done {
		out = append(out, [2]string{key, v})
	}
	m.trailers = out
}

// parseMessage splits a commit message into subject, body and the trailing
// paragraph of Sessiond-* trailers.
func parseMessage(s string) message {
	s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n ")
	subject, rest, _ := strings.Cut(s, "\n")
	m := message{subject: strings.TrimSpace(subject)}
	rest = strings.Trim(rest, "\n")
	last := rest
	before := ""
	if i := strings.LastIndex(rest, "\n\n"); i >= 0 {
		before, last = rest[:i], rest[i+2:]
	}
	var trailers [][2]string
	ok := last != ""
	for _, line := range strings.Split(last, "\n") {
		k, v, found := strings.Cut(line, ": ")
		if !found || !strings.HasPrefix(k, "Sessiond-") {
			ok = false
			break
		}
		trailers = append(trailers, [2]string{k, strings.TrimSpace(v)})
	}
	if ok {
		m.trailers = trailers
		m.body = strings.TrimSpace(before)
	} else {
		m.body = strings.TrimSpace(rest)
	}
	return m
}

// cleanMessage keeps a caller's message printable: no control characters
// other than newline and tab (git log output is split on them), no trailing
// blank lines.
func cleanMessage(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}
