package notify

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/sessiond/sessiond/config"
)

// Origin says where a rule was configured, which decides whose rights its
// secrets are read with.
type Origin int

// Rule origins.
const (
	// FromDaemon: the daemon config, written by whoever runs the daemon;
	// its secrets are read with the daemon's rights.
	FromDaemon Origin = iota
	// FromProject: a project's sessiond.toml, written by the session's
	// user; a root daemon reads its secret file as that user, and its
	// secret_env only from the session's environment.
	FromProject
)

func (o Origin) String() string {
	if o == FromProject {
		return "project"
	}
	return "daemon"
}

// trigger is one parsed entry of a rule's on list.
type trigger struct{ event, reason string }

// compiled is a validated rule ready to match events.
type compiled struct {
	rule   config.NotifyRule
	origin Origin
	// key identifies the rule across calls: its origin, the project it
	// belongs to, and its whole content, so an edited rule is a new rule.
	key      string
	triggers []trigger
}

func compile(r config.NotifyRule, origin Origin, projectDir string) (*compiled, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	c := &compiled{rule: r, origin: origin}
	for _, on := range r.On {
		ev, reason, _ := config.ParseNotifyOn(on)
		c.triggers = append(c.triggers, trigger{ev, reason})
	}
	b, _ := json.Marshal(r)
	c.key = origin.String() + "\x00" + projectDir + "\x00" + string(b)
	return c, nil
}

// matches reports whether the rule is for ev; home expands a leading "~/"
// in the project glob.
func (c *compiled) matches(ev *Event, home string) bool {
	hit := false
	for _, t := range c.triggers {
		if t.event == ev.Type && (t.reason == "" || t.reason == ev.EndReason) {
			hit = true
			break
		}
	}
	if !hit {
		return false
	}
	if c.rule.Project != "" && !MatchProject(c.rule.Project, ev.ProjectDir, home) {
		return false
	}
	if c.rule.SessionName != "" {
		if ok, _ := path.Match(c.rule.SessionName, ev.Name); !ok {
			return false
		}
	}
	return true
}

// MatchProject reports whether the project directory dir matches a rule's
// project glob. A pattern without "/" matches the directory's base name; one
// with "/" matches the whole path, element by element with path.Match, "**"
// standing for any number of elements (none included), and a leading "~/"
// for home (no match when home is empty). A malformed pattern matches
// nothing.
func MatchProject(pattern, dir, home string) bool {
	if dir == "" {
		return false
	}
	dir = strings.TrimSuffix(dir, "/")
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, dir[strings.LastIndex(dir, "/")+1:])
		return ok
	}
	if rest, ok := strings.CutPrefix(pattern, "~/"); ok {
		if home == "" {
			return false
		}
		pattern = strings.TrimSuffix(home, "/") + "/" + rest
	}
	return matchElems(strings.Split(strings.TrimSuffix(pattern, "/"), "/"), strings.Split(dir, "/"))
}

func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			for i := 0; i <= len(name); i++ {
				if matchElems(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
