package sessions

import (
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/agent"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/ipc"
)

// poolOf is the pool a session of sp, started with environ by uid, counts
// in: the spec's named pool, else its agent's account; "" for a command
// that is no agent sessiond knows. account is the agent's account.
func poolOf(sp config.Spec, environ []string, uid int) (pool, account string) {
	if a, err := agent.Detect(sp.Agent, sp.Command); err == nil && a != agent.Generic {
		account = agent.Account(a, spec.BaseEnv(sp, environ), uid)
	}
	if sp.Pool != "" {
		return sp.Pool, account
	}
	return account, account
}

// interactiveSpec reports whether sp runs its agent for a person at a
// terminal: the queue starts those before batch sessions.
func interactiveSpec(sp config.Spec) bool {
	a, err := agent.Detect(sp.Agent, sp.Command)
	return err == nil && sp.OnTerminal() && a.Interactive(sp.Command)
}

// limited is the sessions' OnLimit: a quota's reset holds the agent's
// account until then, in whatever pool its sessions are. Only the account:
// one user's limit (or a hook payload that claims one) never holds the
// sessions of others that share a named pool.
func (d *Service) limited(s *session.Session, l ipc.AgentLimit) {
	if l.Class != ipc.LimitQuota || l.ResetsAt.IsZero() || l.Account == "" {
		return
	}
	d.queue.limit(l.Account, l.ResetsAt)
}

// continueLater queues, for a session that ended, the session that goes on
// with its work: at its limit's reset, the conversation of a headless
// agent that exited at a usage limit (on_limit = "wait"); once the daemon
// is up, one the host's reboot ended (resume_after_reboot).
func (d *Service) continueLater(s *session.Session) {
	rec := s.Snapshot()
	a := rec.Agent
	switch {
	case rec.EndReason == ipc.EndLimit && a != nil && a.Limit != nil && a.Limit.Continue == ipc.ContinueResume && a.ConversationID != "":
		go d.requeue(s, ipc.QueuedForLimit, a.Limit.ContinueAt, true)
	case rec.EndReason == ipc.EndHostRebooted && s.Spec().ResumeAfterReboot:
		go d.requeue(s, ipc.QueuedForReboot, time.Time{}, false)
	}
}

// requeue queues old's continuation: its spec, its project, its
// conversation, after it in its chain. carry keeps old's deadline (a
// wait for a limit is no time of its own).
func (d *Service) requeue(old *session.Session, reason string, notBefore time.Time, carry bool) {
	if d.closing.Load() || old.Project() == nil || d.reg.Successor(old.ID()) != "" {
		return
	}
	rec := old.Snapshot()
	sp := old.Spec()
	p := launchParams{
		UID: old.UID(), Project: old.Project(), Owner: old.Owner(), Spec: sp, Name: rec.Name, EnvKeys: rec.EnvKeys, Environ: old.Environ(),
		RestartOf: old.ID(), Restarts: rec.Restarts, RestartHistory: old.RestartHistory(), Worktree: rec.Worktree,
		Queue: &ipc.QueuePlace{Pool: rec.Pool, Priority: sp.Priority, Reason: reason, NotBefore: notBefore, Since: d.clock.Now()},
	}
	if a := rec.Agent; a != nil {
		p.Resume = a.ConversationID
		agentCopy := *a
		p.Agent = &agentCopy
	}
	if carry {
		p.Deadline, p.WarnAt = rec.Deadline, rec.WarnAt
	}
	ns, _, err := d.launch(p)
	if err != nil {
		d.log.Warn("the session's continuation could not be queued", zap.String("session", old.ID()), zap.String("reason", reason), zap.Error(err))
		d.deps.Events.Publish(ipc.Event{Type: ipc.EventFailed, SessionID: old.ID(), ProjectID: rec.ProjectID, UID: old.UID(),
			Message: "its continuation could not be queued: " + err.Error(), Time: d.clock.Now()})
		return
	}
	d.log.Info("queued the session's continuation", zap.String("session", old.ID()), zap.String("new", ns.ID()), zap.String("reason", reason), zap.Time("not_before", notBefore))
}

// afterPlace is the queue place of a start asked to wait for another
// session (--after, --after-any): nil when that one has ended as it waits
// for already, an error when it ended otherwise.
func (d *Service) afterPlace(c ipc.Caller, sp config.Spec, req ipc.StartRequest) (*ipc.QueuePlace, error) {
	if req.After == "" {
		return nil, nil
	}
	flag := "--after"
	if req.AfterAny {
		flag = "--after-any"
	}
	dep, err := d.reg.Lookup(c, req.After)
	if err != nil {
		return nil, ipc.BadRequest("%s %s: %w", flag, req.After, err)
	}
	rec := dep.Snapshot()
	if !ipc.Live(rec.State) {
		if req.AfterAny || rec.State == ipc.StateEnded && rec.EndReason == ipc.EndComplete {
			return nil, nil
		}
		return nil, ipc.Conflict("--after %s: session %s ended %s, not complete: nothing to start after (use --after-any to start after any end)", req.After, dep.ID(), ipc.EndLabel(rec.EndReason))
	}
	if req.Queue != nil && !*req.Queue {
		return nil, ipc.BadRequest("%s and --no-queue contradict each other: a session that starts after another waits in the queue", flag)
	}
	return &ipc.QueuePlace{Priority: sp.Priority, After: dep.ID(), AfterAny: req.AfterAny, Reason: ipc.QueuedForAfter, Since: d.clock.Now()}, nil
}
