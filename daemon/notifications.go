package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/daemon/notify"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// notifyFlush bounds how long shutdown waits for the notifications still
// queued; then what still runs is stopped and the rest dropped.
const notifyFlush = 5 * time.Second

// onWarningTimeout bounds the on_warning hook (DESIGN §6); it never delays
// the stop.
const onWarningTimeout = 30 * time.Second

// onWarningRule is the name of the rule a spec's on_warning stands for.
const onWarningRule = "on_warning"

// notifications feeds the daemon's events to its notifier. It is the bus's
// tap: every event passes through observe, on the goroutine that
// published it, and leaves as at most one notify.Event, queued. Nothing
// here waits on a sink, so a transition, a handoff or a stop is never held
// up by a notification.
type notifications struct {
	n      *notify.Notifier
	reg    *registry
	log    *zap.Logger
	socket string
	// self is the daemon's own user: the owner of sessions run with the
	// daemon's identity.
	self *notify.Owner
	// daemonOn holds the event types the daemon's rules are for, so that
	// an event no rule wants costs nothing.
	daemonOn map[string]bool

	mu sync.Mutex
	// project holds each project's [[notify]] rules, by directory, as its
	// sessiond.toml had them when a session last started there. A slice
	// held here is replaced, never changed.
	project map[string][]config.NotifyRule
	// waiting holds, for each session whose agent waits, the spell it
	// waits in: the time it started waiting. Every agent_waiting of one
	// spell carries it, so the notifier sends the first alone.
	waiting map[string]string
	// owners caches the home and name of each session owner's account.
	owners map[int]*notify.Owner
}

func newNotifications(cfg *config.Config, reg *registry, log *zap.Logger) (*notifications, error) {
	n, err := notify.New(cfg.Notify, notify.Options{Logger: log})
	if err != nil {
		// Parse validates the rules with their lines; this is a config
		// assembled elsewhere.
		return nil, err
	}
	x := &notifications{
		n: n, reg: reg, log: log.Named("notify"), socket: cfg.Socket, daemonOn: map[string]bool{},
		project: map[string][]config.NotifyRule{}, waiting: map[string]string{}, owners: map[int]*notify.Owner{},
	}
	for _, r := range cfg.Notify {
		for _, on := range r.On {
			if typ, _, err := config.ParseNotifyOn(on); err == nil {
				x.daemonOn[typ] = true
			}
		}
	}
	x.self = selfOwner()
	return x, nil
}

// selfOwner is the daemon's own account as a notification's owner.
func selfOwner() *notify.Owner {
	if o, err := notify.LookupOwner(os.Geteuid()); err == nil {
		return o
	}
	home, _ := os.UserHomeDir()
	return &notify.Owner{UID: os.Geteuid(), GID: os.Getegid(), Home: home}
}

// close sends what is queued, within notifyFlush, then stops the rest.
func (x *notifications) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, notifyFlush)
	defer cancel()
	if err := x.n.Close(ctx); err != nil {
		x.log.Warn("notifications left unsent at shutdown", zap.Error(err))
	}
}

// loadProject takes the [[notify]] rules of p's sessiond.toml for the
// sessions of p from now on. The start already refused a file with a bad
// rule, so an error here means it changed in between: the project then has
// no rules until its next start.
func (x *notifications) loadProject(p *state.Project) {
	rules, err := projectRules(p)
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

// projectRules reads the [[notify]] rules of p's sessiond.toml with its
// user's rights; a project without the file has none.
func projectRules(p *state.Project) ([]config.NotifyRule, error) {
	data, err := p.ReadConfig()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return configfile.ParseProjectNotify(filepath.Join(p.Dir(), config.ProjectFile), data)
}

// observe turns an event of the bus into the notification event it stands
// for, if any, and publishes it to the notifier with the rules of the
// session's project. It runs on the publisher's goroutine and never blocks
// on a sink.
func (x *notifications) observe(ev ipc.Event) {
	out := notify.Event{Time: ev.Time, SessionID: ev.SessionID, ProjectID: ev.ProjectID, Message: ev.Message}
	// atDeadline marks the warning of the session's own deadline.
	atDeadline := false
	switch ev.Type {
	case ipc.EventStarted:
		out.Type = config.NotifyStarted
	case ipc.EventRestarted:
		out.Type = config.NotifyRestarted
	case ipc.EventWarned:
		switch warningReason(ev.Data) {
		case warnBudget:
			// The budget event that comes with it tells of it.
			return
		case warnWaiting:
			// The stop that waiting_timeout brings: the message says
			// when, and the session's deadline is not it.
		default:
			atDeadline = true
		}
		out.Type = config.NotifyWarned
	case ipc.EventAgentWaiting:
		out.Type = config.NotifyAgentWaiting
		out.Spell = x.spell(ev)
	case ipc.EventAgentWorking, ipc.EventAgentIdle:
		x.endSpell(ev.SessionID)
		return
	case ipc.EventEnded:
		x.endSpell(ev.SessionID)
		out.Type = config.NotifyEnded
	case ipc.EventFailed:
		out.Type = config.NotifyFailed
		if hasKey(ev.Data, restartLimitKey) {
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
	default:
		return
	}
	s := x.reg.get(ev.SessionID)
	var rules []config.NotifyRule
	if s != nil {
		rules = x.rulesFor(s, out.Type)
	}
	if !x.daemonOn[out.Type] && !wants(rules, out.Type) {
		return
	}
	if s == nil {
		// A session already removed: what the event itself says.
		out.Owner = x.ownerOf(ev.UID, nil)
		x.n.Publish(out, nil)
		return
	}
	rec := s.Snapshot()
	if out.Type == config.NotifyStarted && rec.RestartOf != "" {
		// A restart: "restarted" tells of it.
		return
	}
	out.Name, out.ProjectDir, out.ProjectID = rec.Name, rec.ProjectDir, rec.ProjectID
	out.Owner = x.ownerOf(s.UID(), s.Owner())
	out.Env = x.sessionEnv(s, &rec)
	out.LogPath = s.LogPath()
	switch out.Type {
	case config.NotifyWarned:
		if atDeadline {
			out.Deadline = rec.Deadline
		}
	case config.NotifyEnded:
		out.EndReason, out.ExitCode, out.Signal = rec.EndReason, rec.ExitCode, rec.Signal
		out.HandoffFile = handoffFile(s, &rec)
	}
	x.n.Publish(out, rules)
}

// restartLimitKey marks the failed event of a session the restart policy
// gave up on (max_restarts within restart_window).
const restartLimitKey = "restart_limit"

// rulesFor returns the rules of s's project for an event of type typ,
// with the spec's on_warning as a rule of its own at every warning: the
// deadline's and the waiting's (warned), and the budget's.
func (x *notifications) rulesFor(s *session.Session, typ string) []config.NotifyRule {
	x.mu.Lock()
	rules := x.project[s.ProjectDir()]
	x.mu.Unlock()
	if typ == config.NotifyWarned || typ == config.NotifyBudget {
		if cmd := s.Spec().OnWarning; cmd != "" {
			rules = append(slices.Clip(rules), onWarning(cmd, s.Name(), typ))
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

// The reasons of a warning (ipc.Warning.Reason) that are not the deadline's.
const (
	warnWaiting = "waiting"
	warnBudget  = "budget"
)

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

// spell returns the waiting spell an agent_waiting event belongs to: the
// one under way, or one that starts now.
func (x *notifications) spell(ev ipc.Event) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if sp, ok := x.waiting[ev.SessionID]; ok {
		return sp
	}
	sp := ev.Time.UTC().Format(time.RFC3339Nano)
	x.waiting[ev.SessionID] = sp
	return sp
}

// endSpell ends the session's waiting spell: the agent works again, is
// idle, or the session ended.
func (x *notifications) endSpell(id string) {
	x.mu.Lock()
	delete(x.waiting, id)
	x.mu.Unlock()
}

// ownerOf is the user a session's notification commands run as: its
// owner, or the daemon's own user when it runs with the daemon's identity.
// Nil means nobody to run as, and a project's command is then refused
// rather than run with the daemon's rights.
func (x *notifications) ownerOf(uid int, o *state.Owner) *notify.Owner {
	if o == nil {
		if uid == x.self.UID {
			return x.self
		}
		var err error
		if o, err = state.LookupOwner(uid); err != nil {
			x.log.Warn("notification owner unknown", zap.Int("uid", uid), zap.Error(err))
			return nil
		}
	}
	out := &notify.Owner{UID: o.UID, GID: o.GID, Groups: slices.Clone(o.Groups)}
	out.Home, out.Name = x.account(o.UID)
	return out
}

// account returns the home and name of the account uid, cached.
func (x *notifications) account(uid int) (home, name string) {
	x.mu.Lock()
	a, ok := x.owners[uid]
	x.mu.Unlock()
	if ok {
		return a.Home, a.Name
	}
	a = &notify.Owner{UID: uid}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		a.Home, a.Name = u.HomeDir, u.Username
	}
	x.mu.Lock()
	if len(x.owners) >= 1024 {
		clear(x.owners)
	}
	x.owners[uid] = a
	x.mu.Unlock()
	return a.Home, a.Name
}

// sessionEnv is the environment a notification command of s starts from:
// what the session's processes get (DESIGN §5.4), to which the notifier
// adds the event's own variables.
func (x *notifications) sessionEnv(s *session.Session, rec *ipc.Session) []string {
	pdir := filepath.Join(rec.ProjectDir, state.DirName)
	if p := s.Project(); p != nil {
		pdir = p.StateDir()
	}
	return append(session.EnvBase(s.Spec()),
		"SESSIOND_DEADLINE="+rec.Deadline.Format(time.RFC3339),
		"SESSIOND_WARN_AT="+rec.WarnAt.Format(time.RFC3339),
		"SESSIOND_SOCKET="+x.socket,
		"SESSIOND_CONTEXT_FILE="+filepath.Join(pdir, state.ContextFile),
		"SESSIOND_STATE_FILE="+filepath.Join(pdir, state.SessionStateFile),
	)
}

// handoffFile is where an ended session's handoff is: the project's, else
// (an unreachable project) the archive in the state dir. The end is on
// disk before the ended event goes out, so it is there to read.
func handoffFile(s *session.Session, rec *ipc.Session) string {
	if rec.HandoffPath != "" {
		return rec.HandoffPath
	}
	archive := filepath.Join(s.Dir(), "handoff.json")
	if _, err := os.Stat(archive); err == nil {
		return archive
	}
	return ""
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
