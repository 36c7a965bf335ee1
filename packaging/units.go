package packaging

import (
	"bytes"
	_ "embed"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// The definitions are plain files with @NAME@ placeholders, filled in by
// one strings.Replacer pass each: a replacement is never scanned again, so
// no argument can inject a placeholder. (text/template would do the same
// job, but executing a template makes the linker keep every exported method
// of every type in the binary, which made sessiond's executable, and so its
// resident memory, a fifth larger.)

//go:embed systemd/sessiond.service
var systemUnit string

//go:embed systemd/sessiond-user.service
var userUnit string

//go:embed launchd/sessiond.plist
var launchdJob string

// SystemdUnit returns the systemd unit that runs exe with args: the system
// unit, or the user unit (WantedBy=default.target, no system directories)
// when user is true. exe must be an absolute path.
func SystemdUnit(user bool, exe string, args []string) (string, error) {
	if err := checkCommand(exe, args); err != nil {
		return "", err
	}
	words := make([]string, 0, len(args)+1)
	for _, w := range append([]string{exe}, args...) {
		words = append(words, quoteExecWord(w))
	}
	t := systemUnit
	if user {
		t = userUnit
	}
	return strings.NewReplacer(
		// ConditionFileIsExecutable= takes the rest of the line as the path,
		// unquoted; only specifiers are expanded in it.
		"@EXECUTABLE@", strings.ReplaceAll(exe, "%", "%%"),
		"@EXEC_START@", strings.Join(words, " "),
	).Replace(t), nil
}

// LaunchdPlist returns the launchd job labelled label that runs exe with
// args, its output appended to logPath: started at load (boot for a
// LaunchDaemon, login for a LaunchAgent), restarted after a crash.
func LaunchdPlist(label, exe string, args []string, logPath string) (string, error) {
	if err := checkCommand(exe, args); err != nil {
		return "", err
	}
	if !filepath.IsAbs(logPath) {
		return "", fmt.Errorf("log path %q is not absolute", logPath)
	}
	var argv strings.Builder
	for i, w := range append([]string{exe}, args...) {
		if i > 0 {
			argv.WriteByte('\n')
		}
		argv.WriteString("\t\t<string>" + xmlText(w) + "</string>")
	}
	return strings.NewReplacer(
		"@LABEL@", xmlText(label),
		"@ARGUMENTS@", argv.String(),
		"@LOG@", xmlText(logPath),
	).Replace(launchdJob), nil
}

// checkCommand refuses what no service definition can carry: a relative
// executable, control characters, and "{{", which kardianos/service would
// take for a template action of its own.
func checkCommand(exe string, args []string) error {
	if !filepath.IsAbs(exe) {
		return fmt.Errorf("executable %q is not an absolute path", exe)
	}
	for _, w := range append([]string{exe}, args...) {
		if strings.Contains(w, "{{") {
			return fmt.Errorf("%q: a service command line cannot contain \"{{\"", w)
		}
		for _, r := range w {
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("%q: a service command line cannot contain control characters", w)
			}
		}
	}
	return nil
}

// quoteExecWord quotes one word of an ExecStart= line (systemd.service,
// "Command lines"): plain words stay as they are; others are double-quoted
// with \ and " escaped, and % and $ doubled so that systemd expands no
// specifier or variable in them.
func quoteExecWord(w string) string {
	plain := w != ""
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=,:@", r)) {
			plain = false
			break
		}
	}
	if plain {
		return w
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%", "$", "$$")
	return `"` + r.Replace(w) + `"`
}

// ExecStart returns the command line of the ExecStart= line of a systemd
// unit: the executable, then its arguments, unquoted as systemd reads them.
// It understands the quoting SystemdUnit writes (double and single quotes,
// backslash escapes, doubled % and $) and refuses what it cannot read.
func ExecStart(unit string) ([]string, error) {
	var line string
	found := false
	for _, l := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "ExecStart="); ok {
			if found {
				return nil, errors.New("the unit has more than one ExecStart= line")
			}
			line, found = v, true
		}
	}
	if !found {
		return nil, errors.New("the unit has no ExecStart= line")
	}
	words, err := splitExecLine(line)
	if err != nil {
		return nil, fmt.Errorf("ExecStart=%s: %w", line, err)
	}
	if len(words) == 0 {
		return nil, errors.New("ExecStart= is empty")
	}
	return words, nil
}

func splitExecLine(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == 0 && (r == ' ' || r == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			continue
		case quote == 0 && (r == '"' || r == '\''):
			quote, inWord = r, true
			continue
		case quote != 0 && r == quote:
			quote = 0
			continue
		case r == '\\':
			if i+1 == len(rs) {
				return nil, errors.New("a trailing backslash")
			}
			i++
			switch rs[i] {
			case 'n':
				cur.WriteRune('\n')
			case 't':
				cur.WriteRune('\t')
			default:
				cur.WriteRune(rs[i])
			}
		case r == '%' || r == '$':
			if i+1 < len(rs) && rs[i+1] == r {
				i++
				cur.WriteRune(r)
			} else {
				return nil, fmt.Errorf("a lone %c: specifiers and variables are not supported", r)
			}
		default:
			cur.WriteRune(r)
		}
		inWord = true
	}
	if quote != 0 {
		return nil, fmt.Errorf("an unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// LaunchdArguments returns the ProgramArguments of a launchd job's
// property list.
func LaunchdArguments(plist []byte) ([]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(plist))
	dec.Strict = true
	var args []string
	depth := 0 // of <dict> elements
	state := 0 // 0: looking for the key, 1: key seen, 2: in its array
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) && state == 0 {
				return nil, errors.New("the property list has no ProgramArguments")
			}
			return nil, fmt.Errorf("read property list: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			text.Reset()
			switch {
			case t.Name.Local == "dict":
				depth++
			case state == 1 && t.Name.Local == "array":
				state = 2
			case state == 1:
				return nil, fmt.Errorf("ProgramArguments is a <%s>, not an <array>", t.Name.Local)
			case state == 2 && t.Name.Local != "string":
				return nil, fmt.Errorf("ProgramArguments holds a <%s>, not only <string>s", t.Name.Local)
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			switch {
			case t.Name.Local == "dict":
				depth--
			case state == 0 && t.Name.Local == "key" && depth == 1 && text.String() == "ProgramArguments":
				state = 1
			case state == 2 && t.Name.Local == "string":
				args = append(args, text.String())
			case state == 2 && t.Name.Local == "array":
				if len(args) == 0 {
					return nil, errors.New("ProgramArguments is empty")
				}
				return args, nil
			}
			text.Reset()
		}
	}
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// Sysusers is the sysusers.d(5) snippet of the packages: the sessiond group
// for allowed_groups.
//
//go:embed systemd/sessiond.sysusers
var Sysusers string

// Tmpfiles is the tmpfiles.d(5) snippet of the packages: /run/sessiond and
// /var/lib/sessiond with their modes.
//
//go:embed systemd/sessiond.tmpfiles
var Tmpfiles string
