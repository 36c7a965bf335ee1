package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// MaxBodySize bounds every request body.
const MaxBodySize = 1 << 20

// Server serves the API on a Unix socket.
type Server struct {
	backend Backend
	log     *zap.Logger
	access  AccessFunc
	mux     *http.ServeMux
	routes  map[string]bool
	http    *http.Server
}

// AccessFunc decides whether a caller may use the API at all.
type AccessFunc func(Caller) bool

// NewServer returns a server for b; access says who may connect.
func NewServer(b Backend, access AccessFunc, log *zap.Logger) *Server {
	s := &Server{backend: b, log: log.Named("api"), access: access, mux: http.NewServeMux(), routes: map[string]bool{}}
	s.handle("GET /v1/sessions", s.listSessions)
	s.handle("POST /v1/sessions", s.startSession)
	s.handle("GET /v1/sessions/{id}", s.getSession)
	s.handle("POST /v1/sessions/{id}/stop", s.stopSession)
	s.handle("POST /v1/sessions/{id}/signal", s.signalSession)
	s.handle("GET /v1/sessions/{id}/logs", s.logs)
	s.handle("GET /v1/events", s.events)
	s.handle("GET /v1/version", s.version)
	s.handle("GET /v1/health", s.health)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, NotFound("no such endpoint: %s %s (the API is under /%s)", r.Method, r.URL.Path, APIVersion))
	})
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext:       connContext,
		ErrorLog:          zap.NewStdLog(s.log),
	}
	return s
}

// Handle registers an extra route; registering a pattern twice panics, as
// a duplicate is a programming error.
func (s *Server) Handle(pattern string, h func(w http.ResponseWriter, r *http.Request, c Caller) error) {
	s.handle(pattern, h)
}

func (s *Server) handle(pattern string, h func(w http.ResponseWriter, r *http.Request, c Caller) error) {
	if s.routes[pattern] {
		panic("ipc: route registered twice: " + pattern)
	}
	s.routes[pattern] = true
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(callerKey{}).(Caller)
		if err := h(w, r, c); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				s.log.Error("request failed", zap.String("route", pattern), zap.Error(err))
				e = newError(http.StatusInternalServerError, CodeInternal, "%v", err)
			}
			writeError(w, e)
		}
	})
}

// ServeHTTP checks the caller, then routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(VersionHeader, s.backend.Version().Version)
	c, ok := r.Context().Value(callerKey{}).(Caller)
	if !ok {
		s.log.Warn("refused connection without peer credentials", zap.String("path", r.URL.Path))
		writeError(w, Forbidden("peer credentials unavailable"))
		return
	}
	if !s.access(c) {
		s.log.Warn("refused caller", zap.Int("uid", c.UID), zap.Int("pid", c.PID), zap.String("path", r.URL.Path))
		writeError(w, Forbidden("uid %d may not use this sessiond", c.UID))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodySize)
	s.mux.ServeHTTP(w, r)
}

// Serve accepts connections on l until ctx is done or Shutdown is called.
func (s *Server) Serve(l net.Listener) error {
	err := s.http.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, ends streams, and waits for requests in flight
// until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.http.Shutdown(ctx)
}

// Close closes the listener and every connection at once.
func (s *Server) Close() error { return s.http.Close() }

type callerKey struct{}

func connContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	caller, err := peerCredentials(uc)
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, callerKey{}, caller)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, c Caller) error {
	q := r.URL.Query()
	all, err := boolParam(q.Get("all"), "all")
	if err != nil {
		return err
	}
	list, err := s.backend.ListSessions(r.Context(), c, ListOptions{All: all, Project: q.Get("project")})
	if err != nil {
		return err
	}
	switch q.Get("view") {
	case "", "record":
	case "row":
		rows := make([]SessionRow, len(list))
		for i := range list {
			rows[i] = list[i].Row()
		}
		return writeJSON(w, http.StatusOK, rows)
	default:
		return BadRequest("view: want record or row, got %q", q.Get("view"))
	}
	if list == nil {
		list = []Session{}
	}
	return writeJSON(w, http.StatusOK, list)
}

func (s *Server) startSession(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req StartRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	resp, err := s.backend.StartSession(r.Context(), c, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, resp)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, c Caller) error {
	sess, err := s.backend.GetSession(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, sess)
}

func (s *Server) stopSession(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req StopRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	sess, err := s.backend.StopSession(r.Context(), c, r.PathValue("id"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, sess)
}

func (s *Server) signalSession(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req SignalRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if err := s.backend.SignalSession(r.Context(), c, r.PathValue("id"), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request, c Caller) error {
	q := r.URL.Query()
	follow, err := boolParam(q.Get("follow"), "follow")
	if err != nil {
		return err
	}
	tail := 0
	if t := q.Get("tail"); t != "" {
		tail, err = strconv.Atoi(t)
		if err != nil || tail < 0 {
			return BadRequest("tail: want a non-negative number of lines, got %q", t)
		}
	}
	// Resolve the session first so that an unknown id is a 404, not an
	// empty 200.
	if _, err := s.backend.GetSession(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
	if err := s.backend.Logs(r.Context(), c, r.PathValue("id"), LogOptions{Tail: tail, Follow: follow}, fw); err != nil && r.Context().Err() == nil {
		s.log.Warn("log stream ended early", zap.String("session", r.PathValue("id")), zap.Error(err))
	}
	return nil
}

func (s *Server) events(w http.ResponseWriter, r *http.Request, c Caller) error {
	follow := true
	if v := r.URL.Query().Get("follow"); v != "" {
		var err error
		if follow, err = boolParam(v, "follow"); err != nil {
			return err
		}
	}
	ch, err := s.backend.Subscribe(r.Context(), c, EventOptions{Follow: follow})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	enc := json.NewEncoder(w)
	for ev := range ch {
		if err := enc.Encode(ev); err != nil {
			return nil
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
	return nil
}

func (s *Server) version(w http.ResponseWriter, r *http.Request, c Caller) error {
	return writeJSON(w, http.StatusOK, s.backend.Version())
}

func (s *Server) health(w http.ResponseWriter, r *http.Request, c Caller) error {
	return writeJSON(w, http.StatusOK, s.backend.Health())
}

// DecodeBody decodes a JSON request body strictly: unknown fields, trailing
// data and bodies over MaxBodySize are errors. An empty body decodes to the
// zero value.
func DecodeBody(r *http.Request, v any) error { return decodeBody(r, v) }

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge,
				Message: fmt.Sprintf("request body is over the limit of %d bytes", mbe.Limit)}
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return BadRequest("malformed JSON body at byte %d: %v", se.Offset, err)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return BadRequest("field %q: want %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return BadRequest("malformed JSON body: %v", err)
	}
	if dec.More() {
		return BadRequest("malformed JSON body: data after the object")
	}
	return nil
}

func boolParam(v, name string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, BadRequest("%s: want 1/0 or true/false, got %q", name, v)
	}
	return b, nil
}

// WriteJSON writes v as the pretty-printed JSON response with status.
func WriteJSON(w http.ResponseWriter, status int, v any) error { return writeJSON(w, status, v) }

func writeJSON(w http.ResponseWriter, status int, v any) error {
	// Compact: sessionctl pretty-prints what it shows, and jq does for curl.
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
	return nil
}

func writeError(w http.ResponseWriter, e *Error) {
	status := e.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	_ = writeJSON(w, status, ErrorBody{Error: e.Message, Code: e.Code, Candidates: e.Candidates})
}

// flushWriter flushes after every write, so that followed logs arrive as
// they are written.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}
