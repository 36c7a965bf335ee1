package configfile

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/BurntSushi/toml"

	"github.com/sessiond/sessiond/config"
)

//go:embed default.toml
var defaultTOML []byte

// DefaultTOML returns the default daemon configuration embedded in the binary.
func DefaultTOML() []byte { return bytes.Clone(defaultTOML) }

// Error is a configuration error that points into a file.
type Error struct {
	File string // "" for the embedded defaults
	Line int    // 0 when unknown
	Key  string // dotted key, when known
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("<embedded defaults>")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Default returns the embedded default configuration.
func Default() *config.Config {
	c, err := Parse("", defaultTOML)
	if err != nil {
		panic("embedded default config is invalid: " + err.Error())
	}
	return c
}

// Load reads the daemon configuration at path over the embedded defaults.
// A missing file is not an error: the defaults apply (found is false).
func Load(path string) (c *config.Config, found bool, err error) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read config: %w", err)
	}
	c, err = Parse(path, data)
	return c, true, err
}

// maxFileSize bounds a config file: far above any real one, far below
// what would hurt to hold.
const maxFileSize = 1 << 20

// readFile reads the config file path: a regular file of at most
// maxFileSize bytes. Anything else (a FIFO, a device such as /dev/zero, a
// directory) is refused without blocking on it or reading it.
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file", path, kindOf(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than the %d KiB a config file may be", path, maxFileSize>>10)
	}
	return data, nil
}

// kindOf names what a file that is not a regular one is.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// Parse decodes a daemon configuration over the embedded defaults; file
// names the source in errors.
func Parse(file string, data []byte) (*config.Config, error) {
	c := &config.Config{}
	if file != "" {
		// The defaults first, so that a key missing from the file keeps its
		// default value.
		c = Default()
	}
	if file == "" {
		// warn_before and stop_signal, unset in the embedded defaults, fit
		// the timeout and the terminal.
		c.Defaults.WarnBeforeAuto, c.Defaults.StopSignalAuto = true, true
	}
	md, err := toml.Decode(string(data), c)
	if err != nil {
		return nil, decodeError(file, data, err)
	}
	if err := unknownKeys(file, data, md); err != nil {
		return nil, err
	}
	if err := wantTables(file, data, md, "defaults.env", "defaults.watch"); err != nil {
		return nil, err
	}
	if md.IsDefined("defaults", "warn_before") {
		c.Defaults.WarnBeforeAuto = false
	}
	if md.IsDefined("defaults", "stop_signal") {
		c.Defaults.StopSignalAuto = false
	}
	if err := c.Validate(); err != nil {
		return nil, located(file, data, "", err)
	}
	if err := checkSchedule(c.Defaults.Checkpoint); err != nil {
		return nil, located(file, data, "", &config.FieldError{Key: "defaults.checkpoint", Msg: err.Error()})
	}
	if err := checkNotify(file, data, c.Notify); err != nil {
		return nil, err
	}
	return c, nil
}

// CheckSpec reports the first thing wrong with a spec assembled outside a
// file (flags over a project's spec): config.Spec.Validate and the
// checkpoint schedule's syntax.
func CheckSpec(s *config.Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if err := checkSchedule(s.Checkpoint); err != nil {
		return &config.FieldError{Key: "checkpoint", Msg: err.Error()}
	}
	return nil
}

// LoadProject reads path (a project's sessiond.toml) over base and returns
// the merged spec. A missing file returns base unchanged.
func LoadProject(path string, base config.Spec) (config.Spec, error) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return base, nil
	}
	if err != nil {
		return base, fmt.Errorf("read project spec: %w", err)
	}
	return ParseProject(path, data, base)
}

// ParseProject decodes a project's sessiond.toml over base.
func ParseProject(file string, data []byte, base config.Spec) (config.Spec, error) {
	p := config.Project{Session: base.Clone()}
	md, err := toml.Decode(string(data), &p)
	if err != nil {
		return base, decodeError(file, data, err)
	}
	if err := unknownKeys(file, data, md); err != nil {
		return base, err
	}
	if err := checkNotify(file, data, p.Notify); err != nil {
		return base, err
	}
	if err := wantTables(file, data, md, "session.env", "watch"); err != nil {
		return base, err
	}
	s := p.Session
	if md.IsDefined("session", "warn_before") {
		s.WarnBeforeAuto = false
	}
	if md.IsDefined("session", "stop_signal") {
		s.StopSignalAuto = false
	}
	if p.Watch != nil {
		// A project's ignores add to the daemon's.
		s.Watch.Ignore = append(append([]string(nil), base.Watch.Ignore...), p.Watch.Ignore...)
	}
	if md.IsDefined("service") {
		s.Services = p.Services
	}
	if err := CheckSpec(&s); err != nil {
		return base, located(file, data, "session.", err)
	}
	return s, nil
}

// located turns a *config.FieldError into an *Error pointing at the key's
// line; prefix is the table the spec keys sit in ("session." in a
// project's file), except for [[service]] keys, which are top-level there.
func located(file string, data []byte, prefix string, err error) error {
	var fe *config.FieldError
	if !errors.As(err, &fe) {
		return &Error{File: file, Msg: err.Error()}
	}
	key := fe.Key
	if !strings.HasPrefix(key, "service[") {
		key = prefix + key
	}
	return &Error{File: file, Line: findKey(data, key), Key: key, Msg: fe.Msg}
}

func decodeError(file string, data []byte, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.Usage != "" {
			msg += " (" + strings.TrimSpace(strings.SplitN(pe.Usage, "\n", 2)[0]) + ")"
		}
		return &Error{File: file, Line: pe.Position.Line, Key: pe.LastKey, Msg: msg}
	}
	if m := typeErrRe().FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Key: m[2], Msg: typeMismatch(m[2], m[3])}
	}
	return &Error{File: file, Msg: err.Error()}
}

// wantTables checks that the keys, where given, are tables: the decoder
// leaves a table's field as it was when given a string (env = "x").
func wantTables(file string, data []byte, md toml.MetaData, keys ...string) error {
	for _, k := range keys {
		path := strings.Split(k, ".")
		if md.IsDefined(path...) && md.Type(path...) != "Hash" {
			return &Error{File: file, Line: findKey(data, k), Key: k, Msg: fmt.Sprintf("want a table, such as [%s] with KEY = \"VALUE\" lines, not %s", k, strings.ToLower(md.Type(path...)))}
		}
	}
	return nil
}

// mismatchRe matches the decoder's words for a value of the wrong type.
var mismatchRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^incompatible types: TOML value has type (\w+); destination has type (\w+)`)
})

// typeMismatch says what a key of the wrong type wants, in a user's words:
// command = "true" wants an array, as command = ["true"].
func typeMismatch(key, msg string) string {
	m := mismatchRe().FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	name := key[strings.LastIndex(key, ".")+1:]
	want := map[string]string{
		"slice":   fmt.Sprintf(`an array, such as %s = ["..."]`, name),
		"map":     fmt.Sprintf("a table, such as [%s] with KEY = \"VALUE\" lines", key),
		"struct":  fmt.Sprintf("a table, such as [%s]", key),
		"string":  fmt.Sprintf(`a string in quotes, such as %s = "..."`, name),
		"bool":    fmt.Sprintf("true or false, such as %s = true", name),
		"boolean": fmt.Sprintf("true or false, such as %s = true", name),
		"int":     fmt.Sprintf("a whole number, such as %s = 8", name),
		"int64":   fmt.Sprintf("a whole number, such as %s = 8", name),
		"integer": fmt.Sprintf("a whole number, such as %s = 8", name),
		"float":   fmt.Sprintf("a number, such as %s = 0.5", name),
	}[m[2]]
	if want == "" {
		return msg
	}
	got := map[string]string{"string": "a string", "map": "a table", "slice": "an array", "int64": "a number", "integer": "a number", "float64": "a number", "float": "a number", "bool": "a boolean"}[m[1]]
	if got == "" {
		got = m[1]
	}
	return fmt.Sprintf("want %s, not %s", want, got)
}

// typeErrRe matches the decoder's type errors, which carry their position
// only in the message.
var typeErrRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`) })

func unknownKeys(file string, data []byte, md toml.MetaData) error {
	und := md.Undecoded()
	if len(und) == 0 {
		return nil
	}
	k := und[0].String()
	return &Error{File: file, Line: findKey(data, k), Key: k, Msg: "unknown key"}
}

var (
	tableRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?`) })
	keyRe   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*("?)([A-Za-z0-9_.\-]+)("?)\s*=`) })
)

// findKey returns the line that defines the dotted key in TOML source, or 0.
// Array-of-table indexes ("service[1].name") match the n-th such table.
func findKey(data []byte, key string) int {
	key = strings.ReplaceAll(key, "\"", "")
	wantTable, wantIndex, leaf := "", -1, key
	if i := strings.LastIndex(key, "."); i >= 0 {
		wantTable, leaf = key[:i], key[i+1:]
	}
	if j := strings.Index(wantTable, "["); j >= 0 {
		fmt.Sscanf(wantTable[j:], "[%d]", &wantIndex)
		wantTable = wantTable[:j]
	}
	table, count := "", map[string]int{}
	for n, line := range strings.Split(string(data), "\n") {
		if m := tableRe().FindStringSubmatch(line); m != nil && !strings.Contains(line, "=") {
			table = strings.ReplaceAll(m[1], "\"", "")
			count[table]++
			if table == key {
				return n + 1
			}
			continue
		}
		m := keyRe().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		full := m[2]
		if table != "" {
			full = table + "." + m[2]
		}
		inTable := table == wantTable && (wantIndex < 0 || count[table] == wantIndex+1)
		if full == key || (inTable && m[2] == leaf) || (wantIndex >= 0 && inTable && leaf == "") {
			return n + 1
		}
	}
	return 0
}
