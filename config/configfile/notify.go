package configfile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sessiond/sessiond/config"
)

// ParseProjectNotify decodes the [[notify]] rules of a project's
// sessiond.toml and validates them; file names the source in errors. Keys
// outside [[notify]] are left to ParseProject, which checks the whole file.
func ParseProjectNotify(file string, data []byte) ([]config.NotifyRule, error) {
	var p struct {
		Notify []config.NotifyRule `toml:"notify"`
	}
	md, err := toml.Decode(string(data), &p)
	if err != nil {
		return nil, decodeError(file, data, err)
	}
	for _, k := range md.Undecoded() {
		if len(k) > 1 && k[0] == "notify" {
			return nil, &Error{File: file, Line: findKey(data, k.String()), Key: k.String(), Msg: "unknown key"}
		}
	}
	if err := config.ValidateNotifyRules(p.Notify); err != nil {
		return nil, locateNotify(file, data, err)
	}
	return p.Notify, nil
}

// checkNotify validates the [[notify]] rules of a file, pointing an error
// at its line.
func checkNotify(file string, data []byte, rules []config.NotifyRule) error {
	if err := config.ValidateNotifyRules(rules); err != nil {
		return locateNotify(file, data, err)
	}
	return nil
}

// RuleError places err, a problem found with the rule notify[index] of
// file (a *config.NotifyError naming the rule's own key, as notify.Check
// returns), at the line of that key, else of the rule's [[notify]] header.
func RuleError(file string, data []byte, index int, err error) error {
	var ne *config.NotifyError
	if !errors.As(err, &ne) {
		return &Error{File: file, Line: tableLine(data, "notify", index), Key: fmt.Sprintf("notify[%d]", index), Msg: err.Error()}
	}
	return locateNotify(file, data, &config.NotifyError{Key: fmt.Sprintf("notify[%d].%s", index, ne.Key), Msg: ne.Msg})
}

// locateNotify turns a *config.NotifyError keyed "notify[i].key" into an
// *Error at the key's line; a key the rule does not set (no sink at all,
// say) points at the rule's header.
func locateNotify(file string, data []byte, err error) error {
	var ne *config.NotifyError
	if !errors.As(err, &ne) {
		return &Error{File: file, Msg: err.Error()}
	}
	line := findKey(data, ne.Key)
	if line == 0 {
		var i int
		if _, serr := fmt.Sscanf(ne.Key, "notify[%d]", &i); serr == nil {
			line = tableLine(data, "notify", i)
		}
	}
	return &Error{File: file, Line: line, Key: ne.Key, Msg: ne.Msg}
}

// tableLine returns the line of the index-th [[name]] header in TOML
// source, or 0.
func tableLine(data []byte, name string, index int) int {
	n := 0
	for i, line := range strings.Split(string(data), "\n") {
		m := tableRe().FindStringSubmatch(line)
		if m == nil || strings.Contains(line, "=") || !strings.HasPrefix(strings.TrimSpace(line), "[[") {
			continue
		}
		if strings.ReplaceAll(m[1], "\"", "") != name {
			continue
		}
		if n == index {
			return i + 1
		}
		n++
	}
	return 0
}
