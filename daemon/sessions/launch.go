package sessions

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/access"
	"github.com/sessiond/sessiond/daemon/agent"
	"github.com/sessiond/sessiond/daemon/registry"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/spec"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// launchParams say what session to launch.
type launchParams struct {
	UID     int
	Project *state.Project
	Owner   *state.Owner
	Spec    config.Spec
	Name    string
	EnvKeys []string
	// Environ is the environment of whoever asked for the session.
	Environ        []string
	RestartOf      string
	Restarts       int
	RestartHistory []time.Time
	// Resume is the agent conversation the session continues.
	Resume string
	// ID is the session's id when the start chose it already (for the
	// worktree named after it); Worktree the worktree it runs in.
	ID       string
	Worktree *ipc.Worktree
	// Queue, when set, queues the session rather than start it (with the
	// deadline it carries, when set); NoQueue refuses a start its pool
	// cannot take now, rather than queue it. Agent is what a queued
	// continuation shows of its agent until it runs.
	Queue            *ipc.QueuePlace
	NoQueue          bool
	Deadline, WarnAt time.Time
	Agent            *ipc.Agent
	// ByRoot is a start root asked for in a user's project, which runs as
	// the user (UID) but counts in no limit of the user's.
	ByRoot bool
}

// launch registers a session and starts it, and returns once its command
// runs or its start has failed. The checks and the registration are one
// step of the registry, which looks at the starting user's and project's
// sessions only; the start itself runs unlocked, the registered
// "starting" session holding the project.
func (d *Service) launch(p launchParams) (*session.Session, session.StartInfo, error) {
	dir := p.Project.Dir()
	if _, err := state.FilesOf(p.Owner).LookPath(p.Spec.Command[0], dir, spec.BaseEnv(p.Spec, p.Environ)); err != nil {
		return nil, session.StartInfo{}, ipc.BadRequest("%w", err)
	}
	if d.closing.Load() {
		return nil, session.StartInfo{}, ipc.Unavailable("sessiond is shutting down")
	}
	pool, account := poolOf(p.Spec, p.Environ, p.UID)
	if p.Queue == nil {
		if why := d.queue.holds(pool, account); why != "" {
			if p.NoQueue {
				return nil, session.StartInfo{}, ipc.TooMany("%s: not started (--no-queue); start without --no-queue to wait in the queue", why)
			}
			p.Queue = &ipc.QueuePlace{Pool: pool, Account: account, Priority: p.Spec.Priority, Reason: ipc.QueuedForPool, Why: why, Since: d.clock.Now()}
		} else {
			d.queue.started(pool)
		}
	}
	if p.Queue != nil {
		p.Queue.Pool, p.Queue.Account = pool, account
	}
	id := p.ID
	if p.Worktree != nil {
		if id == "" {
			id = d.reg.NewID()
		}
		wt, err := d.worktrees.Hold(p.Worktree, id, p.Spec.PortRange)
		if err != nil {
			return nil, session.StartInfo{}, err
		}
		p.Worktree = wt
	}
	claim := registry.Claim{
		UID: p.UID, Dir: dir, Exclusive: !p.Spec.Concurrent,
		Name: p.Name, Base: ipc.NameFrom(filepath.Base(dir)), RestartOf: p.RestartOf, ID: id,
		MaxLive: d.cfg.MaxSessions,
		New: func(id, name string) *session.Session {
			return session.New(session.Params{
				ID: id, Name: name, Worktree: p.Worktree, UID: p.UID, Project: p.Project, Owner: p.Owner, Spec: p.Spec, EnvKeys: p.EnvKeys, Environ: p.Environ,
				RestartOf: p.RestartOf, Restarts: p.Restarts, RestartHistory: p.RestartHistory, Resume: p.Resume,
				Pool: pool, Queue: p.Queue, Deadline: p.Deadline, WarnAt: p.WarnAt, Agent: p.Agent,
			}, d.deps)
		},
	}
	if !d.trusted(p.UID) && !p.ByRoot {
		claim.MaxLivePerUser = d.cfg.MaxSessionsPerUser
	}
	s, err := d.reg.Register(claim)
	if err != nil {
		if p.Worktree != nil {
			d.worktrees.Unhold(p.Worktree, id)
		}
		return nil, session.StartInfo{}, err
	}
	if p.Queue != nil {
		if err := s.Enqueue(); err != nil {
			d.reg.Remove(s.ID())
			if p.Worktree != nil {
				d.worktrees.Unhold(p.Worktree, s.ID())
			}
			return nil, session.StartInfo{}, err
		}
		d.queue.add(s, interactiveSpec(p.Spec))
		return s, session.StartInfo{}, nil
	}
	s.Start()
	<-s.Started()
	info := s.TakeStartInfo()
	return s, info, info.Err
}

// resumeFor is the conversation a new session continues: what the request
// names (ipc.StartRequest.Resume), else, with resume = "always", the
// project's last conversation; "" starts a new one.
func (d *Service) resumeFor(c ipc.Caller, p *state.Project, sp config.Spec, want string) (string, error) {
	switch {
	case want == "" && sp.Resume != config.ResumeAlways:
		return "", nil
	case want == "" || want == ipc.ResumeLast:
		conv, err := lastConversation(p)
		if err != nil || conv == "" {
			if want == "" {
				// resume = "always" with nothing to resume: a new one.
				return "", nil
			}
			return "", ipc.BadRequest("--resume: %s has no agent conversation to continue (no session of it ran an agent sessiond knows)", p.Dir())
		}
		return conv, nil
	case filepath.IsAbs(want):
		other, _, err := access.OpenProject(filepath.Clean(want), c.UID)
		if err != nil {
			return "", err
		}
		if err := access.CheckDir(c, other.Dir()); err != nil {
			return "", err
		}
		conv, err := lastConversation(other)
		if err != nil || conv == "" {
			return "", ipc.BadRequest("--resume %s: that project has no agent conversation to continue", want)
		}
		return conv, nil
	}
	if id, err := agent.ParseConversationID(want); err == nil {
		return id, nil
	}
	s, err := d.reg.Lookup(c, want)
	if err != nil {
		return "", ipc.BadRequest("--resume %q: neither a conversation id (a UUID), a session, nor a directory", want)
	}
	a := s.Snapshot().Agent
	if a == nil || a.ConversationID == "" {
		return "", ipc.BadRequest("--resume %s: session %s has no agent conversation", want, s.ID())
	}
	return a.ConversationID, nil
}

// lastConversation is the project's last agent conversation, from its
// session state.
func lastConversation(p *state.Project) (string, error) {
	st, err := p.LoadSessionState()
	if err != nil || st == nil || st.Conversation == nil {
		return "", err
	}
	return st.Conversation.ID, nil
}

// restartResume is the conversation a restart of old continues: with
// resume = "on-restart" or "always", its own. The restart policy's restart
// of a session that completed starts a new one (its work was done);
// sessionctl restart (asked) continues it whatever the end.
func restartResume(old *session.Session, asked bool) string {
	rec := old.Snapshot()
	sp := old.Spec()
	if sp.Resume == config.ResumeNever || rec.Agent == nil || (rec.EndReason == ipc.EndComplete && !asked) {
		return ""
	}
	return rec.Agent.ConversationID
}

// Relaunch implements restart.Launcher: the restart policy's restart of
// old, with the same spec in the same project.
func (d *Service) Relaunch(old *session.Session, history []time.Time) (string, error) {
	if d.closing.Load() {
		return "", ipc.Unavailable("sessiond is shutting down")
	}
	if old.Project() == nil {
		return "", fmt.Errorf("the project %s is unreachable", old.ProjectDir())
	}
	rec := old.Snapshot()
	ns, _, err := d.launch(launchParams{
		UID: old.UID(), Project: old.Project(), Owner: old.Owner(), Spec: old.Spec(), Name: rec.Name, EnvKeys: rec.EnvKeys, Environ: old.Environ(),
		RestartOf: old.ID(), Restarts: rec.Restarts + 1, RestartHistory: history, Resume: restartResume(old, false), Worktree: rec.Worktree,
	})
	if ns == nil {
		return "", err
	}
	return ns.ID(), err
}
