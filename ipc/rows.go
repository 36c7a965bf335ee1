package ipc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// DecodeRows decodes a JSON array of SessionRow, as GET /v1/sessions with
// view=row sends it. It gives what encoding/json gives, in one pass and
// without reflection, for what the server writes: a listing of a thousand
// sessions is some 300 KB, which encoding/json takes milliseconds over.
// Anything else (an unknown or repeated key, an escaped string, a number
// that is not a plain integer...) is left to encoding/json, whose result,
// or error, is then the answer.
func DecodeRows(data []byte) ([]SessionRow, error) {
	return decodeRows(data, string(data))
}

// decodeOwnedRows is DecodeRows of an answer nobody else holds or will
// change: the rows' texts are cut from data itself, not from a copy of it
// (a listing of 100 sessions is 35 KB).
func decodeOwnedRows(data []byte) ([]SessionRow, error) {
	return decodeRows(data, unsafe.String(unsafe.SliceData(data), len(data)))
}

// decodeRows decodes data, whose text is text.
func decodeRows(data []byte, text string) ([]SessionRow, error) {
	if rows, ok := fastRows(data, text); ok {
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
	b []byte
	// all is b as a string: the texts of the rows are cut from it, one
	// copy for all of them rather than an allocation each.
	all string
	i   int
	ok  bool
}

func fastRows(data []byte, text string) ([]SessionRow, bool) {
	s := &rowScanner{b: data, all: text, ok: true}
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

// keyLits are the keys of a row as the server writes them, in its order
// (the order of the key bits), each with its quotes and colon.
var keyLits = [...][]byte{[]byte(`"id":`), []byte(`"name":`), []byte(`"command":`), []byte(`"state":`),
	[]byte(`"end_reason":`), []byte(`"pid":`), []byte(`"started_at":`), []byte(`"ended_at":`), []byte(`"deadline":`),
	[]byte(`"restarts":`), []byte(`"last_activity":`), []byte(`"checkpoints":`), []byte(`"project_dir":`),
	[]byte(`"usage":`), []byte(`"agent":`), []byte(`"tokens":`), []byte(`"tty":`), []byte(`"worktree":`),
	[]byte(`"pool":`), []byte(`"queue":`)}

// rowKey is the bit of a row's key, 0 for none: a switch, which the
// compiler makes a search by length and content, rather than a map's hash.
func rowKey(k []byte) int {
	switch string(k) {
	case "id":
		return keyID
	case "name":
		return keyName
	case "command":
		return keyCommand
	case "state":
		return keyState
	case "end_reason":
		return keyEndReason
	case "pid":
		return keyPID
	case "started_at":
		return keyStartedAt
	case "ended_at":
		return keyEndedAt
	case "deadline":
		return keyDeadline
	case "restarts":
		return keyRestarts
	case "last_activity":
		return keyLastActivity
	case "checkpoints":
		return keyCheckpoints
	case "project_dir":
		return keyProjectDir
	case "usage":
		return keyUsage
	case "agent":
		return keyAgent
	case "tokens":
		return keyTokens
	case "tty":
		return keyTTY
	case "worktree":
		return keyWorktree
	case "pool":
		return keyPool
	case "queue":
		return keyQueue
	}
	return 0
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
	seen, next := 0, 0
	for s.ok {
		key := 0
		// The server writes the keys in their order, omitting some: the
		// next one written is tried first, as it is written.
		for j := next; j < len(keyLits); j++ {
			if bytes.HasPrefix(s.b[s.i:], keyLits[j]) {
				s.i += len(keyLits[j])
				key, next = 1<<j, j+1
				break
			}
		}
		if key == 0 {
			k, ok := s.str()
			if !ok {
				s.fail()
				return
			}
			key = rowKey(k)
			s.space()
			if !s.eat(':') {
				s.fail()
				return
			}
		}
		if key == 0 || seen&key != 0 {
			s.fail()
			return
		}
		seen |= key
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
	// Most strings are short and plain ASCII: find the closing quote at
	// once, then look for what would make the string anything else.
	if n := bytes.IndexByte(s.b[s.i:], '"'); n >= 0 && plainASCII(s.b[s.i:s.i+n]) {
		s.i += n + 1
		return s.b[start:s.i], true
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

// plainASCII reports whether b is printable ASCII without a backslash.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
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
		end := s.i - 1
		return s.all[end-(len(v)-2) : end]
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

// usageLits are a Usage's keys as the server writes them, in its order
// (bits 1, 2 and 4 of usageFields), each with its quotes and colon.
var usageLits = [...][]byte{[]byte(`"cpu_percent":`), []byte(`"rss_bytes":`), []byte(`"procs":`)}

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
	seen, next := 0, 0
	for {
		bit := 0
		// As the server writes them first, as in a row.
		for j := next; j < len(usageLits); j++ {
			if bytes.HasPrefix(s.b[s.i:], usageLits[j]) {
				s.i += len(usageLits[j])
				bit, next = 1<<j, j+1
				break
			}
		}
		if bit == 0 {
			k, ok := s.str()
			if !ok {
				return false
			}
			switch string(k) {
			case "cpu_percent":
				bit = 1
			case "rss_bytes":
				bit = 2
			case "procs":
				bit = 4
			}
			s.space()
			if !s.eat(':') {
				return false
			}
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
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
