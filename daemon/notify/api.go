package notify

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/access"
	"github.com/sessiond/sessiond/daemon/identity"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// entry is one rule of a listing: what the API shows of it, the rule
// itself, and whose rights its secret is read with.
type entry struct {
	info   ipc.NotifyRuleInfo
	rule   config.NotifyRule
	origin Origin
}

// scope is what a listing or a test is about: the rules that apply
// to a project (or the daemon's alone), and the user, directory and
// environment a test's sample event is sent with.
type scope struct {
	entries []entry
	dir     string
	owner   *Owner
	env     []string
}

// scope gathers the rules for dir, read with c's rights: the
// daemon's, the project's [[notify]] rules, and the on_warning of the spec
// the project's sessions would run under.
func (x *Service) scope(c ipc.Caller, dir string) (*scope, error) {
	sc := &scope{}
	privileged := mayTestDaemonRules(c)
	add := func(origin string, index int, r config.NotifyRule) {
		o := FromProject
		if origin == ipc.NotifyOriginDaemon {
			o = FromDaemon
		}
		shown := r.Redacted()
		if o == FromDaemon && !privileged && len(shown.Command) > 1 {
			// The daemon's commands are its owner's: their arguments
			// may hold what other users should not read.
			shown.Command = append(shown.Command[:1:1], "…")
		}
		sc.entries = append(sc.entries, entry{
			info: ipc.NotifyRuleInfo{Number: len(sc.entries) + 1, Origin: origin, Index: index, Label: r.Label(), Rule: shown},
			rule: r, origin: o,
		})
	}
	for i, r := range x.rules {
		add(ipc.NotifyOriginDaemon, i, r)
	}
	sp := x.defaults.Clone()
	var owner *identity.User
	if dir != "" {
		p, o, err := access.OpenProject(dir, c.UID)
		if err != nil {
			return nil, err
		}
		if err := access.CheckDir(c, p.Dir()); err != nil {
			return nil, err
		}
		rules, err := spec.NotifyRules(p)
		if err != nil {
			return nil, ipc.BadRequest("%w", err)
		}
		if sp, err = spec.Project(p, sp); err != nil {
			return nil, ipc.BadRequest("%w", err)
		}
		for i, r := range rules {
			add(ipc.NotifyOriginProject, i, r)
		}
		sc.dir, owner = p.Dir(), o
	} else {
		o, err := access.Owner(c.UID)
		if err != nil {
			return nil, ipc.Forbidden("%w", err)
		}
		owner = o
	}
	onWarn, env := sp.OnWarning, spec.BaseEnv(sp, nil)
	if sc.dir != "" {
		// A live session's on_warning is its own (sessionctl start
		// --on-warning), and its environment the one it runs with.
		if sub, ok := x.sessions.LiveSubject(sc.dir, c.UID); ok {
			onWarn, env = sub.OnWarning, sub.Env
		}
	}
	if onWarn != "" {
		add(ipc.NotifyOriginSpec, 0, onWarning(onWarn, "", config.NotifyWarned))
	}
	sc.owner = x.ownerOf(c.UID, owner)
	sc.env = env
	return sc, nil
}

// mayTestDaemonRules reports whether c may send through the daemon's own
// rules, and see their commands whole: root and the daemon's user.
func mayTestDaemonRules(c ipc.Caller) bool { return c.Root() || c.UID == os.Geteuid() }

// find returns the entry a "notify test" argument names: a rule's name,
// else its number in the listing.
func (sc *scope) find(arg string) (entry, bool) {
	for _, e := range sc.entries {
		if e.rule.Name == arg {
			return e, true
		}
	}
	if n, err := strconv.Atoi(arg); err == nil && n >= 1 && n <= len(sc.entries) {
		return sc.entries[n-1], true
	}
	return entry{}, false
}

// labels lists the rules by number and label, for an error.
func (sc *scope) labels() string {
	var b []string
	for _, e := range sc.entries {
		b = append(b, fmt.Sprintf("%d %s", e.info.Number, e.info.Label))
	}
	if len(b) == 0 {
		return "there are none"
	}
	return "the rules are " + strings.Join(b, ", ")
}

// NotifyStatus implements ipc.Notifications.
func (x *Service) NotifyStatus(ctx context.Context, c ipc.Caller, dir string) (*ipc.NotifyStatus, error) {
	sc, err := x.scope(c, dir)
	if err != nil {
		return nil, err
	}
	st := x.n.Stats()
	out := &ipc.NotifyStatus{Rules: []ipc.NotifyRuleInfo{}, ProjectDir: sc.dir, Stats: ipc.NotifyStats{
		Published: st.Published, Duplicates: st.Duplicates, Queued: st.Queued, Suppressed: st.Suppressed,
		Dropped: st.Dropped, Sent: st.Sent, Failed: st.Failed, Pending: st.Pending,
	}}
	for _, e := range sc.entries {
		out.Rules = append(out.Rules, e.info)
	}
	return out, nil
}

// NotifyTest implements ipc.Notifications: the sample event goes through
// each rule asked for at once, all of them side by side, bypassing the
// rules' events, filters and queues. The daemon's rules page whoever the
// daemon's owner chose, so only root and the daemon's own user may test
// them.
func (x *Service) NotifyTest(ctx context.Context, c ipc.Caller, req ipc.NotifyTestRequest) (*ipc.NotifyTestResponse, error) {
	sc, err := x.scope(c, req.Dir)
	if err != nil {
		return nil, err
	}
	mayDaemon := mayTestDaemonRules(c)
	var pick []entry
	if req.Rule != "" {
		e, ok := sc.find(req.Rule)
		if !ok {
			return nil, ipc.NotFound("no notification rule %q: %s (sessionctl notify rules lists them)", req.Rule, sc.labels())
		}
		if e.origin == FromDaemon && !mayDaemon {
			return nil, ipc.Forbidden("rule %s is the daemon's: only root and the daemon's user may test it", e.info.Label)
		}
		pick = []entry{e}
	} else {
		for _, e := range sc.entries {
			if e.origin != FromDaemon || mayDaemon {
				pick = append(pick, e)
			}
		}
	}
	if len(pick) == 0 {
		where := "the daemon config"
		if sc.dir != "" {
			where += " or " + sc.dir + "/" + config.ProjectFile
		}
		return nil, ipc.NotFound("no notification rules to test: none in %s", where)
	}
	ev := SampleEvent()
	ev.Owner, ev.Env, ev.ProjectDir = sc.owner, sc.env, sc.dir
	if sc.dir != "" {
		ev.ProjectID = state.ProjectID(sc.dir)
	}
	out := &ipc.NotifyTestResponse{Results: make([]ipc.NotifyTestResult, len(pick))}
	var wg sync.WaitGroup
	for i, e := range pick {
		wg.Go(func() {
			start := time.Now()
			err := x.n.Test(ctx, e.rule, e.origin, ev)
			r := ipc.NotifyTestResult{NotifyRuleInfo: e.info, Delivered: err == nil, TookMS: time.Since(start).Milliseconds()}
			if err != nil {
				// The result names the rule already.
				r.Error = strings.TrimPrefix(err.Error(), "rule "+e.rule.Label()+": ")
			}
			out.Results[i] = r
		})
	}
	wg.Wait()
	return out, nil
}
