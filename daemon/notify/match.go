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

// matchElems reports whether the pattern's elements match the path's, in
// time proportional to their product however many "**" the pattern has:
// next[j] says whether the rest of the pattern matches name[j:].
func matchElems(pat, name []string) bool {
	next := make([]bool, len(name)+1)
	cur := make([]bool, len(name)+1)
	next[len(name)] = true
	for i := len(pat) - 1; i >= 0; i-- {
		if pat[i] == "**" {
			cur[len(name)] = next[len(name)]
			for j := len(name) - 1; j >= 0; j-- {
				cur[j] = next[j] || cur[j+1]
			}
		} else {
			cur[len(name)] = false
			for j := len(name) - 1; j >= 0; j-- {
				ok, err := path.Match(pat[i], name[j])
				cur[j] = err == nil && ok && next[j+1]
			}
		}
		next, cur = cur, next
	}
	return next[0]
}
