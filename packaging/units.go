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
	"text/template"
)

//go:embed systemd/sessiond.service
var systemUnitTemplate string

//go:embed systemd/sessiond-user.service
var userUnitTemplate string

//go:embed launchd/sessiond.plist
var launchdTemplate string

var (
	systemUnit = template.Must(template.New("sessiond.service").Parse(systemUnitTemplate))
	userUnit   = template.Must(template.New("sessiond-user.service").Parse(userUnitTemplate))
	launchdJob = template.Must(template.New("sessiond.plist").Funcs(template.FuncMap{"xml": xmlText}).Parse(launchdTemplate))
)

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
	data := struct{ Executable, ExecStart string }{
		// ConditionFileIsExecutable= takes the rest of the line as the path,
		// unquoted; only specifiers are expanded in it.
		Executable: strings.ReplaceAll(exe, "%", "%%"),
		ExecStart:  strings.Join(words, " "),
	}
	t := systemUnit
	if user {
		t = userUnit
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render %s: %w", t.Name(), err)
	}
	return b.String(), nil
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
	data := struct {
		Label, Log string
		Arguments  []string
	}{label, logPath, append([]string{exe}, args...)}
	var b bytes.Buffer
	if err := launchdJob.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render %s: %w", launchdJob.Name(), err)
	}
	return b.String(), nil
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

func xmlText(s string) (string, error) {
	var b strings.Builder
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		return "", err
	}
	return b.String(), nil
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
