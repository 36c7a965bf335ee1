package checkpoint

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Trailer keys of checkpoint commit messages. They make a checkpoint
// self-describing, so List reads everything from one git log.
const (
	trailerSession = "Sessiond-Session"
	trailerFiles   = "Sessiond-Files-Changed"
	trailerDepth   = "Sessiond-Depth"
	trailerFolded  = "Sessiond-Folded"
	trailerWas     = "Sessiond-Was"
)

// message is a checkpoint commit message: a generated subject, the caller's
// message as body, and a trailer paragraph.
type message struct {
	subject  string
	body     string
	trailers [][2]string
}

func subjectFor(kind, sessionID string, t time.Time, files int) string {
	noun := "files"
	if files == 1 {
		noun = "file"
	}
	return fmt.Sprintf("%s of session %s at %s: %d %s changed",
		kind, sessionID, t.UTC().Format(time.RFC3339), files, noun)
}

func (m message) String() string {
	var b strings.Builder
	b.WriteString(m.subject)
	b.WriteString("\n")
	if m.body != "" {
		b.WriteString("\n")
		b.WriteString(m.body)
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
