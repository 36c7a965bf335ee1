package ipc

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// DecodeRows decodes a JSON array of SessionRow, as GET /v1/sessions with
// view=row sends it. It gives what encoding/json gives, in one pass and
// without reflection, for what the server writes: a listing of a thousand
// sessions is some 300 KB, which encoding/json takes milliseconds over.
// Anything else (an unknown or repeated key, an escaped string, a number
// that is not a plain integer...) is left to encoding/json, whose result,
// or error, is then the answer.
func DecodeRows(data []byte) ([]SessionRow, error) {
	if rows, ok := fastRows(data); ok {
		return rows, nil
	}
	var rows []SessionRow
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// rowScanner reads the JSON of a listing; ok turns false at the first
// thing it leaves to encoding/json.
type rowScanner struct {
	b  []byte
	i  int
	ok bool
}

func fastRows(data []byte) ([]SessionRow, bool) {
	s := &rowScanner{b: data, ok: true}
	s.space()
	if !s.eat('[') {
		return nil, false
	}
	// Rows are some 300 bytes each: one allocation for them all.
	rows := make([]SessionRow, 0, len(data)/256+1)
	s.space()
	if s.eat(']') {
		return rows, s.end()
	}
	for s.ok {
		rows = append(rows, SessionRow{})
		s.row(&rows[len(rows)-1])
		s.space()
		if s.eat(']') {
			return rows, s.end()
		}
		if !s.eat(',') {
			return nil, false
		}
		s.space()
	}
	return nil, false
}

// end reports whether nothing but white space is left, and all went well.
func (s *rowScanner) end() bool {
	s.space()
	return s.ok && s.i == len(s.b)
}

func (s *rowScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *rowScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *rowScanner) fail() { s.ok = false }

// The keys of a row, as bits of the set seen so far.
const (
	keyID = 1 << iota
	keyName
	keyCommand
	keyState
	keyEndReason
	keyPID
	keyStartedAt
	keyEndedAt
	keyDeadline
	keyRestarts
	keyLastActivity
	keyCheckpoints
	keyProjectDir
	keyUsage
	keyAgent
	keyTokens
	keyTTY
	keyWorktree
	keyPool
	keyQueue
)

var rowKeys = map[string]int{
	"id": keyID, "name": keyName, "command": keyCommand, "state": keyState, "end_reason": keyEndReason,
	"pid": keyPID, "started_at": keyStartedAt, "ended_at": keyEndedAt, "deadline": keyDeadline,
	"restarts": keyRestarts, "last_activity": keyLastActivity, "checkpoints": keyCheckpoints,
	"project_dir": keyProjectDir, "usage": keyUsage, "agent": keyAgent, "tokens": keyTokens,
	"tty": keyTTY, "worktree": keyWorktree, "pool": keyPool, "queue": keyQueue,
}

func (s *rowScanner) row(r *SessionRow) {
	s.space()
	if !s.eat('{') {
		s.fail()
		return
	}
	s.space()
	if s.eat('}') {
		return
	}
	seen := 0
	for s.ok {
		k, ok := s.str()
		if !ok {
			s.fail()
			return
		}
		key := rowKeys[string(k)]
		if key == 0 || seen&key != 0 {
			s.fail()
			return
		}
		seen |= key
		s.space()
		if !s.eat(':') {
			s.fail()
			return
		}
		s.space()
		s.value(r, key)
		s.space()
		if s.eat('}') {
			return
		}
		if !s.eat(',') {
			s.fail()
			return
		}
		s.space()
	}
}

func (s *rowScanner) value(r *SessionRow, key int) {
	switch key {
	case keyID:
		r.ID = s.text()
	case keyName:
		r.Name = s.text()
	case keyState:
		r.State = s.text()
	case keyEndReason:
		r.EndReason = s.text()
	case keyProjectDir:
		r.ProjectDir = s.text()
	case keyPID:
		r.PID = s.int()
	case keyRestarts:
		r.Restarts = s.int()
	case keyCheckpoints:
		r.Checkpoints = s.int()
	case keyCommand:
		r.Command = s.strings()
	case keyStartedAt:
		s.time(&r.StartedAt)
	case keyDeadline:
		s.time(&r.Deadline)
	case keyEndedAt:
		r.EndedAt = s.timePtr()
	case keyLastActivity:
		r.LastActivity = s.timePtr()
	case keyTTY:
		r.TTY = s.bool()
	case keyUsage:
		r.Usage = s.usage()
	case keyAgent:
		nested(s, &r.Agent)
	case keyTokens:
		nested(s, &r.Tokens)
	case keyWorktree:
		nested(s, &r.Worktree)
	case keyPool:
		r.Pool = s.text()
	case keyQueue:
		nested(s, &r.Queue)
	}
}

// null takes a null literal if one is next.
func (s *rowScanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str takes a string with nothing to unescape and returns its bytes.
func (s *rowScanner) str() ([]byte, bool) {
	v, plain := s.quoted()
	if v == nil || !plain {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// quoted takes a string and returns it with its quotes (nil if it is
// none), and whether it is plain: nothing to unescape, valid UTF-8.
func (s *rowScanner) quoted() (v []byte, plain bool) {
	start := s.i
	if !s.eat('"') {
		return nil, false
	}
	plain = true
	ascii := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			v = s.b[start:s.i]
			if plain && !ascii && !utf8.Valid(v) {
				plain = false
			}
			return v, plain
		case c == '\\':
			plain = false
			s.i++ // what it escapes, a quote maybe, is not the end
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.i++
	}
	return nil, false
}

// text takes a string value: a plain one as it is, one with escapes (as
// the server writes <, > and &) through encoding/json.
func (s *rowScanner) text() string {
	if s.null() {
		return ""
	}
	v, plain := s.quoted()
	switch {
	case v == nil:
		s.fail()
		return ""
	case plain:
		return string(v[1 : len(v)-1])
	}
	var out string
	if err := json.Unmarshal(v, &out); err != nil {
		s.fail()
	}
	return out
}

func (s *rowScanner) strings() []string {
	if s.null() {
		return nil
	}
	if !s.eat('[') {
		s.fail()
		return nil
	}
	out := []string{}
	s.space()
	if s.eat(']') {
		return out
	}
	for s.ok {
		// null in an array of strings is "" to encoding/json, as to text.
		out = append(out, s.text())
		s.space()
		if s.eat(']') {
			return out
		}
		if !s.eat(',') {
			s.fail()
			return nil
		}
		s.space()
	}
	return nil
}

// usage takes a Usage, in every row of a listing with stats: its three
// numbers in one pass, anything else through encoding/json.
func (s *rowScanner) usage() *Usage {
	if s.null() {
		return nil
	}
	start := s.i
	u := &Usage{}
	if s.usageFields(u) {
		return u
	}
	if !s.ok {
		return nil
	}
	s.i = start
	var v *Usage
	nested(s, &v)
	return v
}

// usageFields reads {"cpu_percent":N,"rss_bytes":N,"procs":N} in any
// order, false (s.ok kept) for anything else.
func (s *rowScanner) usageFields(u *Usage) bool {
	if !s.eat('{') {
		return false
	}
	s.space()
	if s.eat('}') {
		return true
	}
	seen := 0
	for {
		k, ok := s.str()
		if !ok {
			return false
		}
		bit := 0
		switch string(k) {
		case "cpu_percent":
			bit = 1
		case "rss_bytes":
			bit = 2
		case "procs":
			bit = 4
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		s.space()
		if !s.eat(':') {
			return false
		}
		s.space()
		lit, isInt := s.number()
		if lit == nil {
			return false
		}
		switch bit {
		case 1:
			f, err := strconv.ParseFloat(string(lit), 64)
			if err != nil {
				return false
			}
			u.CPUPercent = f
		case 2, 4:
			if !isInt {
				return false
			}
			n, err := strconv.ParseInt(string(lit), 10, 64)
			if err != nil || (bit == 4 && int64(int(n)) != n) {
				return false
			}
			if bit == 2 {
				u.RSSBytes = n
			} else {
				u.Procs = int(n)
			}
		}
		s.space()
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
		s.space()
	}
}

// number takes a number in JSON's grammar and returns its literal (nil if
// none is next), and whether it is an integer (no fraction or exponent).
func (s *rowScanner) number() (lit []byte, isInt bool) {
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	first := s.i
	if n := digits(); n == 0 || (n > 1 && s.b[first] == '0') {
		s.i = start
		return nil, false
	}
	isInt = true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			s.i = start
			return nil, false
		}
		isInt = false
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			s.i = start
			return nil, false
		}
		isInt = false
	}
	return s.b[start:s.i], isInt
}

// int takes an integer in JSON's grammar: no sign but minus, no leading
// zero, no fraction or exponent.
func (s *rowScanner) int() int {
	if s.null() {
		return 0
	}
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n := s.i - digits
	if n == 0 || (n > 1 && s.b[digits] == '0') || (s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E')) {
		s.fail()
		return 0
	}
	v, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		s.fail()
	}
	return v
}

func (s *rowScanner) bool() bool {
	switch {
	case s.null():
		return false
	case len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "true":
		s.i += 4
		return true
	case len(s.b)-s.i >= 5 && string(s.b[s.i:s.i+5]) == "false":
		s.i += 5
		return false
	}
	s.fail()
	return false
}

// time decodes a time as encoding/json does: the quoted literal to
// time.Time's UnmarshalJSON.
func (s *rowScanner) time(t *time.Time) {
	if s.null() {
		return
	}
	start := s.i
	if _, ok := s.str(); !ok {
		s.fail()
		return
	}
	if err := t.UnmarshalJSON(s.b[start:s.i]); err != nil {
		s.fail()
	}
}

func (s *rowScanner) timePtr() *time.Time {
	if s.null() {
		return nil
	}
	t := new(time.Time)
	s.time(t)
	return t
}

// nested decodes a nested object with encoding/json, which v (a pointer
// to a nil pointer) is made for: null leaves it nil.
func nested[T any](s *rowScanner, v **T) {
	if s.null() {
		return
	}
	start := s.i
	if !s.skipObject() {
		s.fail()
		return
	}
	*v = new(T)
	if err := json.Unmarshal(s.b[start:s.i], *v); err != nil {
		s.fail()
	}
}

// skipObject moves past an object, strings and nesting taken into
// account; encoding/json then checks what is inside.
func (s *rowScanner) skipObject() bool {
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.i++
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		}
		s.i++
	}
	return false
}
