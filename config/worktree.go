package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// WorktreeOption is the spec's worktree key: false (the default) runs the
// session in the project itself; true runs it in a git worktree of its
// own named after the session; a name runs it in the worktree of that
// name (created on first use, reused after). In TOML and JSON it is
// written as a boolean or a string.
type WorktreeOption struct {
	Enabled bool
	// Name is the worktree's name; "" with Enabled: the session's id.
	Name string
}

// IsZero reports whether o is the default, no worktree.
func (o WorktreeOption) IsZero() bool { return !o.Enabled }

// UnmarshalTOML implements the TOML decoder's Unmarshaler.
func (o *WorktreeOption) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case bool:
		*o = WorktreeOption{Enabled: x}
		return nil
	case string:
		return o.set(x)
	}
	return fmt.Errorf("want true, false or a worktree name, got %v", v)
}

// set takes a name; "" turns the worktree off.
func (o *WorktreeOption) set(name string) error {
	if name == "" {
		*o = WorktreeOption{}
		return nil
	}
	if err := CheckWorktreeName(name); err != nil {
		return err
	}
	*o = WorktreeOption{Enabled: true, Name: name}
	return nil
}

// MarshalJSON writes false, true or the name.
func (o WorktreeOption) MarshalJSON() ([]byte, error) {
	if o.Enabled && o.Name != "" {
		return json.Marshal(o.Name)
	}
	return json.Marshal(o.Enabled)
}

// MarshalTOML implements the TOML encoder's Marshaler (sessiond config
// check prints the effective config): worktree = false, true or "NAME", as
// it is read (a name is a plain word, quoted alike in JSON and TOML).
func (o WorktreeOption) MarshalTOML() ([]byte, error) { return o.MarshalJSON() }

// UnmarshalJSON reads what MarshalJSON writes.
func (o *WorktreeOption) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v == nil {
		*o = WorktreeOption{}
		return nil
	}
	return o.UnmarshalTOML(v)
}

// MaxWorktreeName bounds a worktree's name (its branch is sessiond/NAME).
const MaxWorktreeName = 64

// CheckWorktreeName reports a name that cannot name a worktree: letters,
// digits, '.', '_' and '-', starting with a letter or digit, at most
// MaxWorktreeName long, and a valid git branch name once prefixed with
// sessiond/ (no "..", no ".lock" at the end, no "." at the end).
func CheckWorktreeName(name string) error {
	if name == "" {
		return fmt.Errorf("worktree name: empty")
	}
	if len(name) > MaxWorktreeName {
		return fmt.Errorf("worktree name %q: longer than %d characters", name, MaxWorktreeName)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || (i > 0 && (c == '.' || c == '_' || c == '-'))
		if !ok {
			return fmt.Errorf("worktree name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	if strings.Contains(name, "..") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") {
		return fmt.Errorf("worktree name %q: not a valid git branch name (no \"..\", no \".\" or \".lock\" at the end)", name)
	}
	return nil
}

// SetupCommand is one command of worktree_setup: a shell command line
// (run with /bin/sh -c) or an argument vector (run as it is).
type SetupCommand struct {
	Shell string
	Argv  []string
}

// String shows the command as a user wrote it.
func (c SetupCommand) String() string {
	if c.Argv != nil {
		return strings.Join(c.Argv, " ")
	}
	return c.Shell
}

// Args returns the argument vector that runs the command.
func (c SetupCommand) Args() []string {
	if c.Argv != nil {
		return append([]string(nil), c.Argv...)
	}
	return []string{"/bin/sh", "-c", c.Shell}
}

// SetupCommands is the spec's worktree_setup: a list whose items are
// command lines ("npm ci") or argument vectors (["npm", "ci"]).
type SetupCommands []SetupCommand

// UnmarshalTOML implements the TOML decoder's Unmarshaler.
func (s *SetupCommands) UnmarshalTOML(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a list of commands, each a string or a list of strings, got %v", v)
	}
	out := SetupCommands{}
	for i, item := range list {
		switch x := item.(type) {
		case string:
			out = append(out, SetupCommand{Shell: x})
		case []any:
			argv := make([]string, 0, len(x))
			for _, a := range x {
				s, ok := a.(string)
				if !ok {
					return fmt.Errorf("command %d: want strings, got %v", i, a)
				}
				argv = append(argv, s)
			}
			out = append(out, SetupCommand{Argv: argv})
		default:
			return fmt.Errorf("command %d: want a string or a list of strings, got %v", i, item)
		}
	}
	*s = out
	return nil
}

// MarshalTOML writes the list as it is written: an inline array of
// strings and arrays of strings (a JSON array of them, its strings
// escaped as JSON escapes them, is that in TOML).
func (s SetupCommands) MarshalTOML() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.items()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// MarshalJSON writes the list as it is written in TOML.
func (s SetupCommands) MarshalJSON() ([]byte, error) { return json.Marshal(s.items()) }

// items are the commands as written: strings and lists of strings.
func (s SetupCommands) items() []any {
	out := make([]any, 0, len(s))
	for _, c := range s {
		if c.Argv != nil {
			out = append(out, c.Argv)
		} else {
			out = append(out, c.Shell)
		}
	}
	return out
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *SetupCommands) UnmarshalJSON(b []byte) error {
	var v []any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v == nil {
		*s = nil
		return nil
	}
	return s.UnmarshalTOML(v)
}

// Clone returns a deep copy of s.
func (s SetupCommands) Clone() SetupCommands {
	if s == nil {
		return nil
	}
	out := make(SetupCommands, len(s))
	for i, c := range s {
		out[i] = SetupCommand{Shell: c.Shell}
		if c.Argv != nil {
			out[i].Argv = append([]string{}, c.Argv...)
		}
	}
	return out
}

// PortRange is the spec's port_range, "20000-20999": the ports handed to
// worktree sessions as $PORT. The zero value is no range.
type PortRange struct {
	First, Last int
}

// IsZero reports whether no range is set.
func (r PortRange) IsZero() bool { return r.First == 0 && r.Last == 0 }

// Size is the number of ports in the range.
func (r PortRange) Size() int {
	if r.IsZero() {
		return 0
	}
	return r.Last - r.First + 1
}

// Contains reports whether port is in the range.
func (r PortRange) Contains(port int) bool { return !r.IsZero() && port >= r.First && port <= r.Last }

// String writes the range as "FIRST-LAST", "" for none.
func (r PortRange) String() string {
	if r.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// ParsePortRange parses "FIRST-LAST" (or a single port); "" is no range.
func ParsePortRange(s string) (PortRange, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return PortRange{}, nil
	}
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(lo))
	last, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil {
		return PortRange{}, fmt.Errorf("invalid port range %q (use e.g. 20000-20999)", s)
	}
	r := PortRange{First: first, Last: last}
	if first < 1 || last > 65535 || first > last {
		return PortRange{}, fmt.Errorf("port range %q: want FIRST-LAST with 1 <= FIRST <= LAST <= 65535", s)
	}
	return r, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *PortRange) UnmarshalText(b []byte) error {
	v, err := ParsePortRange(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (r PortRange) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// validateWorktree checks the worktree keys of s.
func (s *Spec) validateWorktree() error {
	if s.Worktree.Enabled && s.Worktree.Name != "" {
		if err := CheckWorktreeName(s.Worktree.Name); err != nil {
			return &FieldError{"worktree", err.Error()}
		}
	}
	if d := s.WorktreeDir; d != "" {
		rest, home := strings.CutPrefix(d, "~/")
		switch {
		case strings.ContainsRune(d, 0):
			return &FieldError{"worktree_dir", "contains a NUL byte"}
		case !home && !filepath.IsAbs(d):
			return &FieldError{"worktree_dir", fmt.Sprintf("%q: want an absolute path, or one under ~/ (the user's home)", d)}
		case home && !filepath.IsLocal(rest):
			return &FieldError{"worktree_dir", fmt.Sprintf("%q: must stay inside the home directory", d)}
		}
	}
	for i, c := range s.WorktreeSetup {
		key := fmt.Sprintf("worktree_setup[%d]", i)
		if c.Argv != nil && (len(c.Argv) == 0 || c.Argv[0] == "") {
			return &FieldError{key, "the program name is empty"}
		}
		if c.Argv == nil && strings.TrimSpace(c.Shell) == "" {
			return &FieldError{key, "the command is empty"}
		}
		if strings.ContainsRune(c.Shell, 0) || strings.ContainsRune(strings.Join(c.Argv, ""), 0) {
			return &FieldError{key, "contains a NUL byte"}
		}
	}
	if r := s.PortRange; !r.IsZero() && (r.First < 1 || r.Last > 65535 || r.First > r.Last) {
		return &FieldError{"port_range", fmt.Sprintf("%q: want FIRST-LAST with 1 <= FIRST <= LAST <= 65535", r.String())}
	}
	return nil
}
