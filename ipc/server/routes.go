package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// register is the one table of the API: every /v1 route, its method, and
// the backend call it adapts to (DESIGN §5.3).
func (s *Server) register() {
	b := s.svc
	v := "/" + ipc.APIVersion

	s.handle("GET "+v+"/sessions", s.listSessions)
	s.handle("POST "+v+"/sessions", s.startSessions)
	s.handle("POST "+v+"/sessions/stop", s.stopSessions)
	s.handle("GET "+v+"/sessions/{id}", bySession(b.Sessions.GetSession))
	s.handle("POST "+v+"/sessions/{id}/stop", withSessionBody(b.Sessions.StopSession))
	s.handle("POST "+v+"/sessions/{id}/signal", s.signalSession)
	s.handle("DELETE "+v+"/sessions/{id}", s.removeSession)
	s.handle("POST "+v+"/sessions/prune", withBody(http.StatusOK, b.Sessions.PruneSessions))
	s.handle("POST "+v+"/sessions/{id}/restart", withSessionBodyStatus(http.StatusCreated, b.Sessions.RestartSession))
	s.handle("POST "+v+"/sessions/{id}/extend", withSessionBody(b.Sessions.ExtendSession))
	s.handle("POST "+v+"/sessions/{id}/report", withSessionBody(b.Sessions.ReportSession))
	s.handle("POST "+v+"/sessions/{id}/checkpoint", bySession(b.Sessions.CheckpointSession))
	s.handle("POST "+v+"/sessions/{id}/agent/hook", withSessionBody(b.Sessions.AgentHook))
	s.handle("GET "+v+"/sessions/{id}/handoff", bySession(b.Sessions.SessionHandoff))
	s.handle("GET "+v+"/sessions/{id}/briefing", bySession(b.Sessions.SessionBriefing))
	s.handle("GET "+v+"/sessions/{id}/logs", s.logs)
	s.handle("GET "+v+"/sessions/{id}/screen", s.screen)
	s.handle("POST "+v+"/sessions/{id}/send", s.send)
	s.handle("GET "+v+"/sessions/{id}/attach", s.attach)

	s.handle("GET "+v+"/projects", s.listProjects)
	s.handle("GET "+v+"/projects/{id}/session", s.projectSession)
	s.handle("DELETE "+v+"/projects/{id}/session", s.clearProjectSession)
	s.handle("GET "+v+"/projects/{id}/checkpoints", s.projectCheckpoints)
	s.handle("GET "+v+"/projects/{id}/checkpoints/stats", s.checkpointStats)
	s.handle("POST "+v+"/projects/{id}/restore", s.restoreProject)
	s.handle("POST "+v+"/projects/{id}/resolve", s.resolveBlockers)

	s.handle("GET "+v+"/notify", func(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
		st, err := b.Notifications.NotifyStatus(r.Context(), c, r.URL.Query().Get("dir"))
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, st)
	})
	s.handle("POST "+v+"/notify/test", withBody(http.StatusOK, b.Notifications.NotifyTest))

	s.handle("GET "+v+"/queue", func(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
		l, err := b.Queue.ListQueue(r.Context(), c)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, l)
	})
	s.handle("GET "+v+"/worktrees", s.listWorktrees)
	s.handle("DELETE "+v+"/worktrees/{name}", s.removeWorktree)

	s.handle("GET "+v+"/events", s.events)
	s.handle("GET "+v+"/version", func(w http.ResponseWriter, r *http.Request, _ ipc.Caller) error {
		return writeJSON(w, http.StatusOK, b.System.Version(r.Context()))
	})
	s.handle("GET "+v+"/health", func(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
		return writeJSON(w, http.StatusOK, b.System.Health(r.Context(), c))
	})
	s.handle("GET "+v+"/metrics", s.serveMetrics)
	s.handle("GET "+v+"/openapi.json", s.openAPI)
	s.registerDebug()
}

// openAPI serves the API as OpenAPI 3.1, made from ipc.Routes once.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request, _ ipc.Caller) error {
	s.openapiOnce.Do(func() { s.openapiDoc, s.openapiErr = ipc.OpenAPI(s.version) })
	if s.openapiErr != nil {
		return s.openapiErr
	}
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(s.openapiDoc)
	return err
}

// startSessions starts one session (a StartRequest) or a batch (an array
// of them, answered with one StartResult each).
func (s *Server) startSessions(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return bodyError(err)
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		var reqs []ipc.StartRequest
		if err := decodeBytes(body, &reqs); err != nil {
			return err
		}
		if len(reqs) > ipc.MaxBatch {
			return ipc.BadRequest("a batch of %d sessions: at most %d", len(reqs), ipc.MaxBatch)
		}
		res, err := s.svc.Sessions.StartSessions(r.Context(), c, reqs)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, res)
	}
	var req ipc.StartRequest
	if err := decodeBytes(body, &req); err != nil {
		return err
	}
	resp, err := s.svc.Sessions.StartSession(r.Context(), c, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, resp)
}

// decodeBytes is decodeBody of a body already read.
func decodeBytes(body []byte, v any) error {
	return decodeBody(&http.Request{Body: io.NopCloser(bytes.NewReader(body))}, v)
}

// The adapters below turn a typed backend call into a handler.

// withBody decodes the body into Req and answers the call's result.
func withBody[Req, Resp any](status int, call func(ctx context.Context, c ipc.Caller, req Req) (Resp, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
		var req Req
		if err := decodeBody(r, &req); err != nil {
			return err
		}
		resp, err := call(r.Context(), c, req)
		if err != nil {
			return err
		}
		return writeJSON(w, status, resp)
	}
}

// bySession calls a backend method on the session named by {id}.
func bySession[Resp any](call func(ctx context.Context, c ipc.Caller, id string) (Resp, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
		resp, err := call(r.Context(), c, r.PathValue("id"))
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, resp)
	}
}

// withSessionBody calls a backend method on the session named by {id} with
// the decoded body.
func withSessionBody[Req, Resp any](call func(ctx context.Context, c ipc.Caller, id string, req Req) (Resp, error)) handler {
	return withSessionBodyStatus(http.StatusOK, call)
}

// withSessionBodyStatus is withSessionBody answering with status.
func withSessionBodyStatus[Req, Resp any](status int, call func(ctx context.Context, c ipc.Caller, id string, req Req) (Resp, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
		var req Req
		if err := decodeBody(r, &req); err != nil {
			return err
		}
		resp, err := call(r.Context(), c, r.PathValue("id"), req)
		if err != nil {
			return err
		}
		return writeJSON(w, status, resp)
	}
}

// project is the project named by {id}, with the directory the client sent.
func project(r *http.Request) ipc.ProjectRef {
	return ipc.ProjectRef{ID: r.PathValue("id"), Dir: r.URL.Query().Get("dir")}
}

// stopSessions is a batch stop, its view from the query.
func (s *Server) stopSessions(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	var req ipc.StopBatchRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	req.View = r.URL.Query().Get("view")
	out, err := s.svc.Sessions.StopSessions(r.Context(), c, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	q := r.URL.Query()
	all, err := boolParam(q.Get("all"), "all")
	if err != nil {
		return err
	}
	chains, err := boolParam(q.Get("chains"), "chains")
	if err != nil {
		return err
	}
	stats, err := boolParam(q.Get("stats"), "stats")
	if err != nil {
		return err
	}
	opt := ipc.ListOptions{All: all, Chains: chains, Stats: stats, Project: q.Get("project")}
	switch q.Get("view") {
	case "", "record":
	case "row":
		rp := rowLists.Get().(*[]ipc.SessionRow)
		rows, err := s.svc.Sessions.ListSessionRows(r.Context(), c, opt, (*rp)[:0])
		if err != nil {
			return err
		}
		if rows == nil {
			rows = []ipc.SessionRow{} // [], not null
		}
		defer func() {
			// Kept without the records' texts, which the collector may
			// then free.
			clear(rows)
			if cap(rows) <= maxKeptRows {
				*rp = rows[:0]
				rowLists.Put(rp)
			}
		}()
		bp := rowAnswers.Get().(*[]byte)
		if cap(*bp) == 0 {
			// Some 350 bytes a row, and the newline.
			*bp = make([]byte, 0, 360*len(rows)+3)
		}
		b, err := ipc.AppendRows((*bp)[:0], rows)
		if err != nil {
			return err
		}
		writeEncoded(w, http.StatusOK, b)
		if cap(b) <= maxKeptAnswer {
			*bp = b[:0]
			rowAnswers.Put(bp)
		}
		return nil
	default:
		return ipc.BadRequest("view: want record or row, got %q", q.Get("view"))
	}
	list, err := s.svc.Sessions.ListSessions(r.Context(), c, opt)
	if err != nil {
		return err
	}
	if list == nil {
		list = []ipc.Session{}
	}
	return writeJSON(w, http.StatusOK, list)
}

// rowLists and rowAnswers keep the rows of listings and the buffers of
// their answers from one request to the next: sessionctl ps asks for one
// each time it runs, 25 KB of rows and 35 KB of answer for 100 sessions,
// which were most of what the daemon allocated. Larger than maxKeptRows
// or maxKeptAnswer (some 3000 rows), they are left to the collector.
var (
	rowLists   = sync.Pool{New: func() any { return new([]ipc.SessionRow) }}
	rowAnswers = sync.Pool{New: func() any { return new([]byte) }}
)

const (
	maxKeptRows   = 4096
	maxKeptAnswer = 1 << 20
)

func (s *Server) removeSession(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	if err := s.svc.Sessions.RemoveSession(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) signalSession(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	var req ipc.SignalRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if err := s.svc.Sessions.SignalSession(r.Context(), c, r.PathValue("id"), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	q := r.URL.Query()
	follow, err := boolParam(q.Get("follow"), "follow")
	if err != nil {
		return err
	}
	tail, err := intParam(q.Get("tail"), "tail")
	if err != nil {
		return err
	}
	opt, err := logTimes(q, time.Now())
	if err != nil {
		return err
	}
	opt.Tail, opt.Follow = tail, follow
	if opt.Raw, err = boolParam(q.Get("raw"), "raw"); err != nil {
		return err
	}
	// Resolve the session first so that an unknown id is a 404, not an
	// empty 200.
	if _, err := s.svc.Sessions.GetSession(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	lw := newLogWriter(w, s.timeouts.Stream(w))
	err = s.svc.Logs.SessionLogs(r.Context(), c, r.PathValue("id"), opt, lw)
	if err != nil && !lw.started() {
		return err
	}
	lw.begin()
	if err != nil && r.Context().Err() == nil {
		s.log.Warn("log stream ended early", zap.String("session", r.PathValue("id")), zap.Error(err))
	}
	return nil
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	list, err := s.svc.Projects.ListProjects(r.Context(), c)
	if err != nil {
		return err
	}
	if list == nil {
		list = []ipc.Project{}
	}
	return writeJSON(w, http.StatusOK, list)
}

// projectSession answers the seed's session API: the state as JSON, or
// with format=summary the rendered restore summary as text.
func (s *Server) projectSession(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	ps, err := s.svc.Projects.ProjectSession(r.Context(), c, project(r))
	if err != nil {
		return err
	}
	switch r.URL.Query().Get("format") {
	case "", "json":
		return writeJSON(w, http.StatusOK, ps.State)
	case "summary":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(ps.Summary))
		return nil
	case "full":
		return writeJSON(w, http.StatusOK, ps)
	}
	return ipc.BadRequest("format: want json, summary or full, got %q", r.URL.Query().Get("format"))
}

func (s *Server) clearProjectSession(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	if err := s.svc.Projects.ClearProjectSession(r.Context(), c, project(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) projectCheckpoints(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	prune, err := intParam(r.URL.Query().Get("prune"), "prune")
	if err != nil {
		return err
	}
	list, err := s.svc.Projects.ProjectCheckpoints(r.Context(), c, project(r), ipc.CheckpointsOptions{Prune: prune, Find: r.URL.Query().Get("find")})
	if err != nil {
		return err
	}
	if list == nil {
		list = []ipc.Checkpoint{}
	}
	return writeJSON(w, http.StatusOK, list)
}

func (s *Server) checkpointStats(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	st, err := s.svc.Projects.CheckpointStats(r.Context(), c, project(r))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

func (s *Server) restoreProject(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	var req ipc.RestoreRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	p := project(r)
	if p.Dir == "" {
		p.Dir = req.Dir
	}
	resp, err := s.svc.Projects.RestoreProject(r.Context(), c, p, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

func (s *Server) resolveBlockers(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	var req ipc.ResolveRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	p := project(r)
	if p.Dir == "" {
		p.Dir = req.Dir
	}
	resp, err := s.svc.Projects.ResolveBlockers(r.Context(), c, p, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	follow := true
	if v := r.URL.Query().Get("follow"); v != "" {
		var err error
		if follow, err = boolParam(v, "follow"); err != nil {
			return err
		}
	}
	ch, err := s.svc.Events.Subscribe(r.Context(), c, ipc.EventOptions{Follow: follow})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	enc := json.NewEncoder(s.timeouts.Stream(w))
	for ev := range ch {
		if err := enc.Encode(ev); err != nil {
			return nil
		}
	}
	return nil
}
