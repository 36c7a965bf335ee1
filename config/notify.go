package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Notification events: the names a [[notify]] rule's on list may give.
// Besides these, "ended:REASON" names an end with one reason (see
// NotifyEndReasons), and "crashed" is short for "ended:crashed".
const (
	// NotifyStarted: a session started (its first run).
	NotifyStarted = "started"
	// NotifyRestarted: a session was started again by its restart policy.
	NotifyRestarted = "restarted"
	// NotifyWarned: the deadline warning was given (warn_before ahead).
	NotifyWarned = "warned"
	// NotifyAgentWaiting: the agent waits for a person (a permission, an
	// answer, or the next prompt); once per waiting spell.
	NotifyAgentWaiting = "agent_waiting"
	// NotifyEnded: a session ended, whatever the reason.
	NotifyEnded = "ended"
	// NotifyCrashed: the daemon restarted and found a session's end
	// unobserved; the same as "ended:crashed".
	NotifyCrashed = "crashed"
	// NotifyFailed: a session failed to start (preflight, spawn) or to
	// restart.
	NotifyFailed = "failed"
	// NotifyRestartLimit: a session was not restarted because it reached
	// max_restarts within restart_window.
	NotifyRestartLimit = "restart_limit"
	// NotifyCheckpointFailed: a checkpoint failed.
	NotifyCheckpointFailed = "checkpoint_failed"
	// NotifyBudget: the session's token or cost budget reached budget_warn
	// (an end because the budget is spent is "ended:budget").
	NotifyBudget = "budget"
	// NotifyAgentLimited: the agent hit a usage limit (a quota with its
	// reset, spent credit, a refused key); NotifyAgentStalled: a working
	// agent made no progress for stall_timeout.
	NotifyAgentLimited = "agent_limited"
	NotifyAgentStalled = "agent_stalled"
	// NotifyAgentRetrying: the agent's requests to its API began to fail
	// and it retries them; once per spell.
	NotifyAgentRetrying = "agent_retrying"
	// NotifyTest: the sample event of "sessionctl notify test"; a rule need
	// not list it to receive it.
	NotifyTest = "test"
)

// NotifyEvents lists the event names a rule's on list may give, besides
// "ended:REASON".
var NotifyEvents = []string{
	NotifyStarted, NotifyRestarted, NotifyWarned, NotifyAgentWaiting, NotifyEnded, NotifyCrashed,
	NotifyFailed, NotifyRestartLimit, NotifyCheckpointFailed, NotifyBudget, NotifyAgentLimited, NotifyAgentStalled, NotifyAgentRetrying, NotifyTest,
}

// NotifyEndReasons lists the end reasons "ended:REASON" may name.
var NotifyEndReasons = []string{
	"complete", "error", "timeout", "idle", "interrupted", "crashed", "budget", "waiting", "oom",
	"limit", "host_rebooted", "cancelled",
}

// Webhook templates: the shape of the request a webhook sink sends.
const (
	TemplateJSON  = "json"
	TemplateSlack = "slack"
	TemplateNtfy  = "ntfy"
)

// Sink kinds, as NotifyRule.Sink names them.
const (
	SinkCommand = "command"
	SinkWebhook = "webhook"
	SinkDesktop = "desktop"
)

// MaxNotifyRetries bounds a webhook's retries.
const MaxNotifyRetries = 10

// DefaultSecretHeader is the header a webhook's secret is sent in when
// secret_header is not given.
const DefaultSecretHeader = "Authorization"

// NotifyRule is one [[notify]] table: which events it is for, which sessions
// it applies to, and the one sink it sends them to. Secrets are never part
// of a rule: secret_file and secret_env name where the secret is read from
// at send time, so a rule can be shown and stored as it is. A webhook URL
// that is itself a credential (Slack's, an ntfy topic) should be shown
// through Redacted.
type NotifyRule struct {
	// Name names the rule for "sessionctl notify test NAME" and in logs.
	Name string `toml:"name" json:"name,omitempty"`
	// On lists the events the rule is for (NotifyEvents, "ended:REASON").
	On []string `toml:"on" json:"on"`
	// Project, when set, limits the rule to projects whose directory
	// matches this glob: with a "/" it matches the whole path ("**" matches
	// any number of directories, a leading "~/" is the session owner's
	// home), without one it matches the directory's base name.
	Project string `toml:"project" json:"project,omitempty"`
	// SessionName, when set, limits the rule to sessions whose name
	// matches this glob (path.Match syntax).
	SessionName string `toml:"session_name" json:"session_name,omitempty"`
	// MinInterval is the least time between two notifications of this rule
	// for one session; later events within it are suppressed.
	MinInterval Duration `toml:"min_interval" json:"min_interval,omitzero"`

	// Command is run (no shell) with the event in its environment and as
	// JSON on stdin.
	Command []string `toml:"command" json:"command,omitempty"`
	// Webhook is an http(s) URL the event is POSTed to.
	Webhook string `toml:"webhook" json:"webhook,omitempty"`
	// Desktop shows a desktop notification (notify-send, osascript).
	Desktop bool `toml:"desktop" json:"desktop,omitempty"`

	// Timeout bounds a command run, a webhook attempt or a desktop
	// notification; zero means the sink's default.
	Timeout Duration `toml:"timeout" json:"timeout,omitzero"`
	// Template is the webhook's request shape: json (default), slack, ntfy.
	Template string `toml:"template" json:"template,omitempty"`
	// Retries is how often a webhook is retried after a network error, a
	// 5xx or a 429; nil means the default.
	Retries *int `toml:"retries" json:"retries,omitempty"`
	// SecretHeader is the header the secret is sent in (default
	// Authorization); the secret is the header's whole value.
	SecretHeader string `toml:"secret_header" json:"secret_header,omitempty"`
	// SecretFile is a file holding the secret (absolute, or "~/..." in the
	// session owner's home), read at each send.
	SecretFile string `toml:"secret_file" json:"secret_file,omitempty"`
	// SecretEnv is an environment variable holding the secret, read at
	// each send.
	SecretEnv string `toml:"secret_env" json:"secret_env,omitempty"`
}

// NotifyError is a problem with one key of a notify rule. Key is the
// rule's key ("webhook"), or, from ValidateNotifyRules, the dotted key of
// the rule in its list ("notify[2].webhook"), which the config's line
// finder understands.
type NotifyError struct {
	Key string
	Msg string
}

func (e *NotifyError) Error() string { return e.Key + ": " + e.Msg }

// Sink returns the kind of the rule's sink (SinkCommand, SinkWebhook,
// SinkDesktop), or "" when it has none.
func (r *NotifyRule) Sink() string {
	switch {
	case len(r.Command) > 0:
		return SinkCommand
	case r.Webhook != "":
		return SinkWebhook
	case r.Desktop:
		return SinkDesktop
	}
	return ""
}

// Label names the rule in logs and errors: its name, else its sink and the
// events it is for.
func (r *NotifyRule) Label() string {
	if r.Name != "" {
		return r.Name
	}
	return fmt.Sprintf("%s on %s", r.Sink(), strings.Join(r.On, ","))
}

// Redacted returns a copy of r fit to be shown or stored: the webhook URL
// keeps its scheme and host, and its path and query (which carry the token
// in Slack's and ntfy's URLs) become "/…".
func (r NotifyRule) Redacted() NotifyRule {
	r.On = slices.Clone(r.On)
	r.Command = slices.Clone(r.Command)
	r.Webhook = RedactURL(r.Webhook)
	return r
}

// RedactURL returns the scheme and host of a URL, followed by "/…" when it
// had a path or query: what may be logged of a webhook address.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		if s == "" {
			return ""
		}
		return "<invalid URL>"
	}
	out := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		out += "/…"
	}
	return out
}

// ParseNotifyOn splits an entry of a rule's on list into the event type it
// matches and, for "ended:REASON" and "crashed", the end reason.
func ParseNotifyOn(s string) (event, reason string, err error) {
	if s == NotifyCrashed {
		return NotifyEnded, "crashed", nil
	}
	if r, ok := strings.CutPrefix(s, NotifyEnded+":"); ok {
		if !slices.Contains(NotifyEndReasons, r) {
			return "", "", fmt.Errorf("unknown end reason %q in %q (one of %s)", r, s, strings.Join(NotifyEndReasons, ", "))
		}
		return NotifyEnded, r, nil
	}
	if !slices.Contains(NotifyEvents, s) {
		return "", "", fmt.Errorf("unknown event %q (one of %s, or ended:REASON)", s, strings.Join(NotifyEvents, ", "))
	}
	return s, "", nil
}

var (
	// The expressions are compiled when first used: every process that
	// links config would otherwise pay for them at start-up, and
	// ruleNameRe's bounded repetition compiles to some 60 KiB it would keep.
	ruleNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })
	envNameRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	// headerRe is an HTTP header name (RFC 9110 token).
	headerRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })
)

// Validate reports the first thing wrong with r, as a *NotifyError naming
// the key.
func (r *NotifyRule) Validate() error {
	if p := r.validate(); p != nil {
		return p
	}
	return nil
}

func (r *NotifyRule) validate() *NotifyError {
	bad := func(key, format string, args ...any) *NotifyError {
		return &NotifyError{Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if r.Name != "" && !ruleNameRe().MatchString(r.Name) {
		return bad("name", "%q is not a rule name (letters, digits, '.', '_', '-'; at most 64)", r.Name)
	}
	if len(r.On) == 0 {
		return bad("on", "is required: the events the rule is for, e.g. [\"ended:error\", \"agent_waiting\"]")
	}
	for _, on := range r.On {
		if _, _, err := ParseNotifyOn(on); err != nil {
			return bad("on", "%v", err)
		}
	}
	if r.Project != "" {
		if err := checkGlob(r.Project); err != nil {
			return bad("project", "%v", err)
		}
	}
	if r.SessionName != "" {
		if _, err := path.Match(r.SessionName, ""); err != nil {
			return bad("session_name", "bad glob %q: %v", r.SessionName, err)
		}
	}
	if r.MinInterval.Duration < 0 {
		return bad("min_interval", "must not be negative, got %s", r.MinInterval)
	}
	if r.Timeout.Duration < 0 {
		return bad("timeout", "must not be negative, got %s", r.Timeout)
	}

	var sinks []string
	if r.Command != nil {
		sinks = append(sinks, SinkCommand)
	}
	if r.Webhook != "" {
		sinks = append(sinks, SinkWebhook)
	}
	if r.Desktop {
		sinks = append(sinks, SinkDesktop)
	}
	switch len(sinks) {
	case 0:
		return bad("command", "no sink: give one of command = [...], webhook = \"https://...\" or desktop = true")
	case 1:
	default:
		return bad(sinks[1], "give exactly one sink, got %s", strings.Join(sinks, " and "))
	}

	webhookOnly := []struct {
		key string
		set bool
	}{
		{"template", r.Template != ""}, {"retries", r.Retries != nil}, {"secret_header", r.SecretHeader != ""},
		{"secret_file", r.SecretFile != ""}, {"secret_env", r.SecretEnv != ""},
	}
	if sinks[0] != SinkWebhook {
		for _, k := range webhookOnly {
			if k.set {
				return bad(k.key, "only applies to a webhook sink")
			}
		}
	}
	switch sinks[0] {
	case SinkCommand:
		if len(r.Command) == 0 || r.Command[0] == "" {
			return bad("command", "the program name is empty")
		}
		for i, a := range r.Command {
			if strings.ContainsRune(a, 0) {
				return bad("command", "argument %d contains a NUL byte", i)
			}
		}
	case SinkWebhook:
		return r.validateWebhook(bad)
	}
	return nil
}

func (r *NotifyRule) validateWebhook(bad func(key, format string, args ...any) *NotifyError) *NotifyError {
	u, err := url.Parse(r.Webhook)
	if err != nil {
		// url.Error quotes the whole URL, which may hold a token.
		return bad("webhook", "not a valid URL (%s)", RedactURL(r.Webhook))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return bad("webhook", "scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return bad("webhook", "the URL has no host")
	}
	if u.User != nil {
		return bad("webhook", "credentials in the URL would be shown wherever the rule is; use secret_header with secret_file or secret_env")
	}
	switch r.Template {
	case "", TemplateJSON, TemplateSlack, TemplateNtfy:
	default:
		return bad("template", "%q is not one of json, slack, ntfy", r.Template)
	}
	if r.Retries != nil && (*r.Retries < 0 || *r.Retries > MaxNotifyRetries) {
		return bad("retries", "must be between 0 and %d, got %d", MaxNotifyRetries, *r.Retries)
	}
	if r.SecretFile != "" && r.SecretEnv != "" {
		return bad("secret_env", "give secret_file or secret_env, not both")
	}
	if r.SecretHeader != "" {
		if !headerRe().MatchString(r.SecretHeader) {
			return bad("secret_header", "%q is not a valid header name", r.SecretHeader)
		}
		switch strings.ToLower(r.SecretHeader) {
		case "host", "content-length", "content-type", "transfer-encoding", "connection":
			return bad("secret_header", "%q is set by sessiond itself", r.SecretHeader)
		}
		if r.SecretFile == "" && r.SecretEnv == "" {
			return bad("secret_header", "needs secret_file or secret_env to say where the secret is")
		}
	}
	if f := r.SecretFile; f != "" {
		if strings.ContainsRune(f, 0) || (!filepath.IsAbs(f) && !strings.HasPrefix(f, "~/")) {
			return bad("secret_file", "%q must be an absolute path or start with ~/", f)
		}
	}
	if r.SecretEnv != "" && !envNameRe().MatchString(r.SecretEnv) {
		return bad("secret_env", "%q is not an environment variable name", r.SecretEnv)
	}
	if (r.SecretFile != "" || r.SecretEnv != "") && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return bad("webhook", "a secret would cross the network in clear text over http://; use https:// (http is for loopback hosts)")
	}
	return nil
}

// loopbackHost reports whether host names this machine.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkGlob checks a project glob: path.Match syntax in each "/"-separated
// element, "**" alone in an element.
func checkGlob(pattern string) error {
	for _, seg := range strings.Split(strings.TrimPrefix(pattern, "~/"), "/") {
		if seg == "**" {
			continue
		}
		if strings.Contains(seg, "**") {
			return fmt.Errorf("bad glob %q: ** must be a whole path element, as in /src/**/app", pattern)
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("bad glob %q: %v", pattern, err)
		}
	}
	return nil
}

// ValidateNotifyRules validates a list of rules (the [[notify]] tables of
// one file) and that their names are unique. The error's key is
// "notify[i].key".
func ValidateNotifyRules(rules []NotifyRule) error {
	names := map[string]int{}
	for i := range rules {
		if p := rules[i].validate(); p != nil {
			p.Key = fmt.Sprintf("notify[%d].%s", i, p.Key)
			return p
		}
		if n := rules[i].Name; n != "" {
			if j, ok := names[n]; ok {
				return &NotifyError{Key: fmt.Sprintf("notify[%d].name", i), Msg: fmt.Sprintf("%q is used twice (also notify[%d])", n, j)}
			}
			names[n] = i
		}
	}
	return nil
}
