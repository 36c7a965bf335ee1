package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// registerRoutes adds the routes beyond the core session API.
func (d *Daemon) registerRoutes(srv *ipc.Server) {
	srv.Handle("POST /v1/sessions/{id}/extend", d.handleExtend)
	srv.Handle("POST /v1/sessions/{id}/report", d.handleReport)
	srv.Handle("POST /v1/sessions/{id}/checkpoint", d.handleCheckpoint)
	srv.Handle("GET /v1/sessions/{id}/handoff", d.handleHandoff)
	srv.Handle("GET /v1/projects", d.handleProjects)
	srv.Handle("GET /v1/projects/{id}/session", d.handleProjectSession)
	srv.Handle("DELETE /v1/projects/{id}/session", d.handleClearSession)
	srv.Handle("GET /v1/projects/{id}/checkpoints", d.handleCheckpoints)
	srv.Handle("POST /v1/projects/{id}/restore", d.handleRestore)
}

func (d *Daemon) handleExtend(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	var req ipc.ExtendRequest
	if err := ipc.DecodeBody(r, &req); err != nil {
		return err
	}
	by, err := config.ParseDuration(req.By)
	if err != nil || by.Duration <= 0 {
		return ipc.BadRequest("extend by %q: want a positive duration such as 30m or 1h", req.By)
	}
	s, err := d.reg.lookup(c, r.PathValue("id"))
	if err != nil {
		return err
	}
	if !ipc.Live(s.snapshot().State) || s.child == nil {
		return ipc.Conflict("session %s has ended; only a live session can be extended", s.id)
	}
	if err := s.send(r.Context(), command{kind: cmdExtend, by: by.Duration}); err != nil {
		if errors.Is(err, errEnded) {
			return ipc.Conflict("session %s has ended; only a live session can be extended", s.id)
		}
		return err
	}
	return ipc.WriteJSON(w, http.StatusOK, s.snapshot())
}

// Report limits (the seed's).
const (
	maxSummary  = 500
	maxNext     = 5
	maxItemLen  = 200
	maxBlockers = 20
)

func (d *Daemon) handleReport(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	var rep ipc.Report
	if err := ipc.DecodeBody(r, &rep); err != nil {
		return err
	}
	s, err := d.reg.lookup(c, r.PathValue("id"))
	if err != nil {
		return err
	}
	if !ipc.Live(s.snapshot().State) || s.child == nil {
		return ipc.Conflict("session %s has ended; reports come from inside a live session", s.id)
	}
	if !c.Root() && !slices.Contains(proc.SessionProcs(s.id, s.child.PID, !s.adopted), c.PID) {
		return ipc.Forbidden("the reporting process (pid %d) is not part of session %s: sessionctl report runs from inside the session", c.PID, s.id)
	}
	if rep.Progress != nil && (math.IsNaN(*rep.Progress) || *rep.Progress < 0 || *rep.Progress > 100) {
		return ipc.BadRequest("progress: want a percentage from 0 to 100, got %v", *rep.Progress)
	}
	switch rep.Status {
	case "", "completed", "in_progress", "blocked", "failed":
	default:
		return ipc.BadRequest("status: %q is not one of completed, in_progress, blocked, failed", rep.Status)
	}
	if rep.Step != "" {
		var cur, tot int
		if n, _ := fmt.Sscanf(rep.Step, "%d/%d", &cur, &tot); n != 2 || cur < 0 || tot <= 0 || cur > tot {
			return ipc.BadRequest("step: want N/M such as 3/5, got %q", rep.Step)
		}
	}
	rep.Summary = clip(rep.Summary, maxSummary)
	rep.Plan = clip(rep.Plan, 2000)
	rep.Task = clip(rep.Task, maxItemLen)
	rep.LastAction = clip(rep.LastAction, maxItemLen)
	rep.Next = clipList(rep.Next, maxNext, maxItemLen)
	rep.Blockers = clipList(rep.Blockers, maxBlockers, maxSummary)
	rep.At = time.Now()
	s.update(func(rec *ipc.Session) {
		old := ipc.Report{}
		if rec.Report != nil {
			old = *rec.Report
		}
		merged := mergeReport(old, rep)
		rec.Report = &merged
	})
	return ipc.WriteJSON(w, http.StatusOK, s.snapshot().Report)
}

// mergeReport lays the fields a report gives over the earlier ones.
func mergeReport(old, rep ipc.Report) ipc.Report {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&old.Summary, rep.Summary)
	set(&old.Plan, rep.Plan)
	set(&old.Task, rep.Task)
	set(&old.Step, rep.Step)
	set(&old.Status, rep.Status)
	set(&old.LastAction, rep.LastAction)
	if rep.Next != nil {
		old.Next = rep.Next
	}
	if rep.Blockers != nil {
		old.Blockers = rep.Blockers
	}
	if rep.Progress != nil {
		old.Progress = rep.Progress
	}
	old.At = rep.At
	return old
}

func clip(s string, max int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func clipList(l []string, n, max int) []string {
	if l == nil {
		return nil
	}
	out := []string{}
	for _, v := range l {
		if v = clip(v, max); v != "" && len(out) < n {
			out = append(out, v)
		}
	}
	return out
}

func (d *Daemon) handleCheckpoint(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	s, err := d.reg.lookup(c, r.PathValue("id"))
	if err != nil {
		return err
	}
	if !ipc.Live(s.snapshot().State) {
		return ipc.Conflict("session %s has ended; checkpoint a project with a live session, or start one", s.id)
	}
	res, err := s.checkpoint("requested")
	if err != nil {
		return ipc.Conflict("checkpoint of %s failed: %v", s.projectDir, err)
	}
	return ipc.WriteJSON(w, http.StatusOK, res)
}

func (d *Daemon) handleHandoff(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	s, err := d.reg.lookup(c, r.PathValue("id"))
	if err != nil {
		return err
	}
	h, err := state.LoadHandoff(s.dir + "/handoff.json")
	if errors.Is(err, fs.ErrNotExist) {
		if ipc.Live(s.snapshot().State) {
			return ipc.NotFound("session %s is still running: its handoff is written when it ends", s.id)
		}
		return ipc.NotFound("session %s has no handoff", s.id)
	}
	if err != nil {
		return ipc.Conflict("%v", err)
	}
	return ipc.WriteJSON(w, http.StatusOK, h)
}

func (d *Daemon) handleProjects(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	byID := map[string]*ipc.Project{}
	var order []string
	for _, s := range d.reg.all() {
		if !visible(c, s) {
			continue
		}
		rec := s.snapshot()
		p := byID[rec.ProjectID]
		if p == nil {
			p = &ipc.Project{ID: rec.ProjectID, Dir: rec.ProjectDir}
			byID[rec.ProjectID] = p
			order = append(order, rec.ProjectID)
		}
		p.Sessions++
		p.LastSession = rec.ID
		if ipc.Live(rec.State) {
			p.Live++
		}
		if rec.EndedAt != nil && rec.EndedAt.After(p.LastEnd) {
			p.LastEnd = *rec.EndedAt
		}
	}
	out := make([]ipc.Project, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return ipc.WriteJSON(w, http.StatusOK, out)
}

// projectFor resolves a project id to its directory: from the sessions the
// daemon knows, else from the dir query parameter, which must match the id.
// The caller must own the directory (or be root).
func (d *Daemon) projectFor(r *http.Request, c ipc.Caller, dirHint string) (string, error) {
	id := r.PathValue("id")
	dir := ""
	for _, s := range d.reg.all() {
		if s.snapshot().ProjectID == id && visible(c, s) {
			dir = s.projectDir
			break
		}
	}
	if dir == "" {
		if dirHint == "" {
			dirHint = r.URL.Query().Get("dir")
		}
		if dirHint == "" {
			return "", ipc.NotFound("no project %q (sessionctl takes a directory: it sends both)", id)
		}
		abs, err := projectDir(dirHint)
		if err != nil {
			return "", err
		}
		if ipc.ProjectID(abs) != id {
			return "", ipc.BadRequest("project id %s does not match directory %s (its id is %s)", id, abs, ipc.ProjectID(abs))
		}
		dir = abs
	}
	if !c.Root() && c.UID != os.Geteuid() {
		if fi, err := os.Stat(dir); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != c.UID {
				return "", ipc.Forbidden("project %s belongs to another user", dir)
			}
		}
	}
	return dir, nil
}

func (d *Daemon) handleProjectSession(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	dir, err := d.projectFor(r, c, "")
	if err != nil {
		return err
	}
	st, err := state.LoadSessionState(dir)
	if err != nil {
		// The corrupt file was kept aside: "no state", and why.
		return ipc.NotFound("%s has no usable session state: %s", dir, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	if st == nil {
		return ipc.NotFound("%s has no session state", dir)
	}
	if r.URL.Query().Get("format") == "summary" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(state.RestoreSummary(st, time.Now())))
		return nil
	}
	return ipc.WriteJSON(w, http.StatusOK, st)
}

func (d *Daemon) handleClearSession(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	dir, err := d.projectFor(r, c, "")
	if err != nil {
		return err
	}
	if err := state.ClearSessionState(dir); err != nil {
		return fmt.Errorf("clear session state of %s: %w", dir, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (d *Daemon) handleCheckpoints(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	dir, err := d.projectFor(r, c, "")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkpoint.DefaultTimeout)
	defer cancel()
	if r.URL.Query().Get("prune") != "" {
		keep := 0
		fmt.Sscanf(r.URL.Query().Get("prune"), "%d", &keep)
		if keep <= 0 {
			return ipc.BadRequest("prune: want the number of checkpoints to keep per session")
		}
		if _, err := d.ext.ckpt.Prune(ctx, dir, keep); err != nil {
			return ipc.Conflict("prune checkpoints of %s: %v", dir, err)
		}
	}
	list, err := d.ext.ckpt.List(ctx, dir)
	if err != nil {
		return ipc.Conflict("list checkpoints of %s: %v", dir, err)
	}
	if list == nil {
		list = []checkpoint.Checkpoint{}
	}
	return ipc.WriteJSON(w, http.StatusOK, list)
}

func (d *Daemon) handleRestore(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	var req ipc.RestoreRequest
	if err := ipc.DecodeBody(r, &req); err != nil {
		return err
	}
	if req.Checkpoint == "" {
		return ipc.BadRequest("checkpoint: which checkpoint to restore (sessionctl checkpoints DIR lists them)")
	}
	dir, err := d.projectFor(r, c, req.Dir)
	if err != nil {
		return err
	}
	if live := d.reg.liveInProject(dir); len(live) > 0 && !req.Force {
		return ipc.Conflict("session %s is running in %s: stop it first, or restore with --force", live[0].id, dir)
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkpoint.DefaultTimeout)
	defer cancel()
	saved, restored, err := d.ext.ckpt.Restore(ctx, dir, req.Checkpoint)
	if err != nil {
		return ipc.Conflict("restore %s to %s: %v", dir, req.Checkpoint, err)
	}
	sb, _ := json.Marshal(saved)
	rb, _ := json.Marshal(restored)
	return ipc.WriteJSON(w, http.StatusOK, ipc.RestoreResponse{Saved: sb, Restored: rb})
}
