package sessions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// maxHookPayload bounds a hook payload the daemon reads; sessionctl hook
// cuts longer ones (Claude Code's tool output can be large), and the
// adapters read what they need from the start.
const maxHookPayload = 1 << 20

// AgentHook implements ipc.Sessions: one payload of a session's agent's
// hooks, from `sessionctl hook`.
func (d *Service) AgentHook(ctx context.Context, c ipc.Caller, id string, req ipc.AgentHookRequest) (*ipc.AgentHookResponse, error) {
	if len(req.Payload) > maxHookPayload {
		return nil, ipc.BadRequest("hook payload: %d bytes, more than %d", len(req.Payload), maxHookPayload)
	}
	const what = "only a live session's agent reports to it"
	s, err := d.running(c, id, what)
	if err != nil {
		return nil, err
	}
	if a := s.Snapshot().Agent; a != nil && req.Agent != "" && req.Agent != a.Name {
		return nil, ipc.BadRequest("a %s hook for session %s, whose agent is %s", req.Agent, s.ID(), a.Name)
	}
	resp, err := s.AgentHook(ctx, []byte(req.Payload))
	if err != nil {
		return nil, ended(s, err, what)
	}
	return &resp, nil
}

// FindSessionctl is the sessionctl the agents' hooks and MCP server run:
// the one installed beside this sessiond, else the first on PATH; "" when
// there is none (agents then run without sessiond's hooks).
func FindSessionctl() string {
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), "sessionctl"); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath("sessionctl"); err == nil {
		if abs, err := filepath.Abs(p); err == nil && !strings.ContainsAny(abs, "\n\x00") {
			return abs
		}
	}
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// SessionBriefing implements ipc.Sessions: the project's files as the
// session's user reads them now.
func (d *Service) SessionBriefing(ctx context.Context, c ipc.Caller, id string) (*ipc.Briefing, error) {
	s, err := d.reg.Lookup(c, id)
	if err != nil {
		return nil, err
	}
	p := s.Project()
	if p == nil {
		return nil, ipc.Conflict("the project %s of session %s is unreachable", s.ProjectDir(), s.ID())
	}
	rec := s.Snapshot()
	b := &ipc.Briefing{NextActions: []string{}, Blockers: append([]ipc.Blocker{}, rec.Blockers...)}
	if h, err := p.LoadHandoff(); err == nil && h.SessionID != s.ID() {
		b.Previous = h
	}
	feats, ferr := p.LoadFeatures(s.Spec().FeatureList)
	st, _ := p.LoadSessionState()
	view, _ := session.ProjectView(st, feats, ferr)
	if view != nil {
		b.NextActions = append(b.NextActions, view.NextActions...)
		b.ProgressPct, b.TasksDone, b.TasksTotal = view.ProgressPct, view.TasksDone, view.TasksTotal
		if view.LastSession != nil {
			b.Summary = view.LastSession.Summary
		}
	}
	if ferr == nil {
		if next := state.NextTasks(feats, 1); len(next) > 0 {
			f := next[0]
			b.NextTask = &ipc.Task{ID: f.Key().String(), Description: f.Description, Priority: f.Priority.String()}
		}
	}
	return b, nil
}
