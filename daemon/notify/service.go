package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/identity"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// flushTimeout bounds how long shutdown waits for the notifications still
// queued; then what still runs is stopped and the rest dropped.
const flushTimeout = 5 * time.Second

// onWarningTimeout bounds the on_warning hook (DESIGN §6); it never delays
// the stop.
const onWarningTimeout = 30 * time.Second

// onWarningRule is the name of the rule a spec's on_warning stands for.
const onWarningRule = "on_warning"

// Subject is what a notification tells of its session.
type Subject struct {
	Rec ipc.Session
	// Owner is the user the session runs as, nil for the daemon's own.
	Owner *identity.User
	// OnWarning is the spec's on_warning command.
	OnWarning string
	// Env is what the session's processes start from (DESIGN §5.4).
	Env     []string
	LogPath string
	// HandoffFile is where an ended session's handoff is, "" for none.
	HandoffFile string
}

// Sessions says what notifications need to know of a session: the
// registry's answer, through the daemon's wiring. Without full, Env and
// HandoffFile are left out (what decides whether a rule wants the event
// costs no more than a lookup).
type Sessions interface {
	Subject(id string, full bool) (Subject, bool)
	// LiveSubject is the live session of uid in the project dir, whose
	// spec (its --on-warning, say) notify rules and notify test go by.
	LiveSubject(dir string, uid int) (Subject, bool)
}

// Service feeds the daemon's events to its notifier and serves the
// notifications API (ipc.Notifications). It is the event bus's observer:
// every event passes through Observe, on the goroutine that published it,
// and leaves as at most one Event, queued. Nothing here waits on a sink, so
// a transition, a handoff or a stop is never held up by a notification.
type Service struct {
	n        *Notifier
	sessions Sessions
	log      *zap.Logger
	rules    []config.NotifyRule
	defaults config.Spec
	// pageURL is the web listener's page ("" without one): a notification
	// links to its session there.
	pageURL string
	// self is the daemon's own user: the owner of sessions run with the
	// daemon's identity.
	self *identity.User
	// daemonOn holds the event types the daemon's rules are for, so that
	// an event no rule wants costs nothing.
	daemonOn map[string]bool

	mu sync.Mutex
	// project holds each project's [[notify]] rules, by directory, as its
	// sessiond.toml had them when a session last started there. A slice
	// held here is replaced, never changed.
	project map[string][]config.NotifyRule
}

var _ ipc.Notifications = (*Service)(nil)

// NewService returns the notifications of the daemon configured by cfg
// for the sessions it is told of.
func NewService(cfg *config.Config, sessions Sessions, log *zap.Logger) (*Service, error) {
	var allow []config.HostPattern
	for _, h := range cfg.NotifyAllowHosts {
		p, err := config.ParseHostPattern(h)
		if err != nil {
			return nil, fmt.Errorf("notify_allow_hosts: %w", err)
		}
		allow = append(allow, p)
	}
	n, err := New(cfg.Notify, Options{Logger: log, AllowHosts: allow, OwnListeners: listeners(cfg.MetricsListen)})
	if err != nil {
		// Parse validates the rules with their lines; this is a config
		// assembled elsewhere.
		return nil, err
	}
	x := &Service{
		n: n, sessions: sessions, log: log.Named("notify"), rules: cfg.Notify, defaults: cfg.Defaults,
		self: identity.Self(), daemonOn: map[string]bool{}, project: map[string][]config.NotifyRule{},
		pageURL: cfg.Web.PageURL(),
	}
	for _, r := range cfg.Notify {
		for _, on := range r.On {
			if typ, _, err := config.ParseNotifyOn(on); err == nil {
				x.daemonOn[typ] = true
			}
		}
	}
	return x, nil
}

// listeners are the addresses of the daemon's own TCP listener (its
// metrics_listen), resolved.
func listeners(hostport string) []netip.AddrPort {
	host, port, err := net.SplitHostPort(hostport)
	if hostport == "" || err != nil {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil
	}
	var out []netip.AddrPort
	addrs := []string{host}
	if _, err := netip.ParseAddr(host); err != nil {
		addrs, _ = net.LookupHost(host)
	}
	if host == "" {
		addrs = []string{"0.0.0.0", "::"}
	}
	for _, a := range addrs {
		if ip, err := netip.ParseAddr(a); err == nil {
			out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(n)))
		}
	}
	return out
}

// Close sends what is queued, within flushTimeout, then stops the rest.
func (x *Service) Close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	if err := x.n.Close(ctx); err != nil {
		x.log.Warn("notifications left unsent at shutdown", zap.Error(err))
	}
}

// LoadProject takes the [[notify]] rules of p's sessiond.toml for the
// sessions of p from now on. The start already refused a file with a bad
// rule, so an error here means it changed in between: the project then has
// no rules until its next start.
func (x *Service) LoadProject(p *state.Project) {
	rules, err := spec.NotifyRules(p)
	if err != nil {
		x.log.Warn("project notification rules not loaded", zap.String("project", p.Dir()), zap.Error(err))
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(rules) == 0 {
		delete(x.project, p.Dir())
		return
	}
	x.project[p.Dir()] = rules
}

// Observe turns an event of the bus into the notification event it stands
// for, if any, and publishes it to the notifier with the rules of the
// session's project. It runs on the publisher's goroutine and never blocks
// on a sink.
func (x *Service) Observe(ev ipc.Event) {
	out := Event{Time: ev.Time, SessionID: ev.SessionID, ProjectID: ev.ProjectID, Message: ev.Message}
	x.mu.Lock()
	page := x.pageURL
	x.mu.Unlock()
	if page != "" && ev.SessionID != "" {
		out.Link = page + "/#/s/" + ev.SessionID
	}
	// atDeadline marks the warning of the session's own deadline.
	atDeadline := false
	switch ev.Type {
	case ipc.EventStarted:
		out.Type = config.NotifyStarted
	case ipc.EventRestarted:
		out.Type = config.NotifyRestarted
	case ipc.EventWarned:
		switch warningReason(ev.Data) {
		case ipc.WarnBudget:
			// The budget event that comes with it tells of it.
			return
		case ipc.WarnStalled:
			// The agent_stalled event that comes with it tells of it.
			return
		case ipc.WarnWaiting, ipc.WarnMemory:
			// The stop that waiting_timeout brings: the message says
			// when, and the session's deadline is not it.
		default:
			atDeadline = true
		}
		out.Type = config.NotifyWarned
	case ipc.EventAgentWaiting:
		out.Type = config.NotifyAgentWaiting
		// The spell is the wait the agent is in: when it began, as the
		// session's record keeps it.
		out.Spell = waitingSince(ev)
	case ipc.EventEnded:
		out.Type = config.NotifyEnded
	case ipc.EventFailed:
		out.Type = config.NotifyFailed
		if hasKey(ev.Data, ipc.RestartLimitKey) {
			out.Type = config.NotifyRestartLimit
		}
	case ipc.EventCheckpoint:
		// A checkpoint taken is routine; one that failed is the event.
		if !hasKey(ev.Data, "error") {
			return
		}
		out.Type = config.NotifyCheckpointFailed
	case ipc.EventBudget:
		out.Type = config.NotifyBudget
	case ipc.EventAgentLimited:
		out.Type = config.NotifyAgentLimited
	case ipc.EventAgentStalled:
		out.Type = config.NotifyAgentStalled
	case ipc.EventAgentRetrying:
		out.Type = config.NotifyAgentRetrying
	default:
		return
	}
	sub, found := x.sessions.Subject(ev.SessionID, false)
	var rules []config.NotifyRule
	if found {
		rules = x.rulesFor(sub, out.Type)
	}
	if !x.daemonOn[out.Type] && !wants(rules, out.Type) {
		return
	}
	if !found {
		// A session already removed: what the event itself says.
		out.Owner = x.ownerOf(ev.UID, nil)
		x.n.Publish(out, nil)
		return
	}
	if out.Type == config.NotifyStarted && sub.Rec.RestartOf != "" {
		// A restart: "restarted" tells of it.
		return
	}
	if sub, found = x.sessions.Subject(ev.SessionID, true); !found {
		return
	}
	rec := sub.Rec
	out.Name, out.ProjectDir, out.ProjectID = rec.Name, rec.ProjectDir, rec.ProjectID
	out.Owner = x.ownerOf(rec.UID, sub.Owner)
	out.Env = sub.Env
	out.LogPath = sub.LogPath
	switch out.Type {
	case config.NotifyWarned:
		if atDeadline {
			out.Deadline = rec.Deadline
		}
	case config.NotifyEnded:
		out.EndReason, out.ExitCode, out.Signal = rec.EndReason, rec.ExitCode, rec.Signal
		out.HandoffFile = sub.HandoffFile
	}
	x.n.Publish(out, rules)
}

// rulesFor returns the rules of a session's project for an event of type
// typ, with the spec's on_warning as a rule of its own at every warning:
// the deadline's and the waiting's (warned), and the budget's.
func (x *Service) rulesFor(sub Subject, typ string) []config.NotifyRule {
	x.mu.Lock()
	rules := x.project[sub.Rec.ProjectDir]
	x.mu.Unlock()
	if typ == config.NotifyWarned || typ == config.NotifyBudget {
		if sub.OnWarning != "" {
			rules = append(slices.Clip(rules), onWarning(sub.OnWarning, sub.Rec.Name, typ))
		}
	}
	return rules
}

// onWarning is the rule a spec's on_warning stands for: the command through
// /bin/sh at a warning (an event of type on), bounded in time. It names the
// session, so that each session's hook has a queue of its own and one
// session's hanging hook never holds up another's.
func onWarning(cmd, session, on string) config.NotifyRule {
	return config.NotifyRule{
		Name: onWarningRule, On: []string{on}, SessionName: session,
		Command: []string{"/bin/sh", "-c", cmd}, Timeout: config.Duration{Duration: onWarningTimeout},
	}
}

// warningReason returns what a warned event's warning is for ("" for the
// deadline's).
func warningReason(data json.RawMessage) string {
	var w struct {
		Reason string `json:"reason"`
	}
	if len(data) == 0 || json.Unmarshal(data, &w) != nil {
		return ""
	}
	return w.Reason
}

// waitingSince is the time an agent_waiting event's wait began, as its
// data says; the event's own time for one that does not say.
func waitingSince(ev ipc.Event) string {
	var d struct {
		Since time.Time `json:"since"`
	}
	if len(ev.Data) == 0 || json.Unmarshal(ev.Data, &d) != nil || d.Since.IsZero() {
		return ev.Time.UTC().Format(time.RFC3339Nano)
	}
	return d.Since.UTC().Format(time.RFC3339Nano)
}

// wants reports whether one of rules is for events of type typ.
func wants(rules []config.NotifyRule, typ string) bool {
	for _, r := range rules {
		for _, on := range r.On {
			if t, _, err := config.ParseNotifyOn(on); err == nil && t == typ {
				return true
			}
		}
	}
	return false
}

// ownerOf is the user a session's notification commands run as: its
// owner, or the daemon's own user when it runs with the daemon's identity.
// Nil means nobody to run as, and a project's command is then refused
// rather than run with the daemon's rights.
func (x *Service) ownerOf(uid int, o *identity.User) *Owner {
	if o != nil {
		return o
	}
	if uid == x.self.UID {
		return x.self
	}
	o, err := identity.Lookup(uid)
	if err != nil {
		x.log.Warn("notification owner unknown", zap.Int("uid", uid), zap.Error(err))
		return nil
	}
	return o
}

// hasKey reports whether an event's data is a JSON object with key.
func hasKey(data json.RawMessage, key string) bool {
	if len(data) == 0 {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

// SetPageURL sets the base of the links to sessions' pages: the web
// listener's address once it listens (its port may have been picked then).
func (x *Service) SetPageURL(u string) {
	x.mu.Lock()
	x.pageURL = u
	x.mu.Unlock()
}
