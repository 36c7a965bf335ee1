package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// MaxBodySize bounds every request body.
const MaxBodySize = 1 << 20

// AccessFunc decides whether a caller may use the API at all.
type AccessFunc func(ipc.Caller) bool

// Server serves the API on a Unix socket.
type Server struct {
	svc      ipc.Services
	version  string
	log      *zap.Logger
	access   AccessFunc
	limits   Limits
	timeouts Timeouts
	mux      *http.ServeMux
	routes   map[string]bool
	// conns is the socket's listener, whose caps the web listener's
	// connections count under too.
	connsMu sync.Mutex
	conns   *Listener
	// openapiDoc is /v1/openapi.json, made at its first request.
	openapiOnce sync.Once
	openapiDoc  []byte
	openapiErr  error
	http        *http.Server
	metrics     http.Handler
	observe     func(route string, status int)
	// streams are the attached terminals, which the HTTP server no longer
	// tracks once upgraded.
	streams streams
}

// Options tune a Server; the zero value is the defaults.
type Options struct {
	// Limits bound the connections open at once (see Listener).
	Limits Limits
	// Metrics serves GET /v1/metrics; nil answers 404 (metrics are off).
	Metrics http.Handler
	// Observe, if set, is told of every request answered: its route (the
	// route table's pattern, "unmatched" or "refused") and status.
	Observe func(route string, status int)
}

// handler is a route's adapter: it decodes the request, calls the backend
// and writes the answer; an error it returns is written as the error body.
type handler func(w http.ResponseWriter, r *http.Request, c ipc.Caller) error

// documented are the patterns of ipc.Routes, the only ones the server
// registers.
var documented = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range ipc.Routes {
		m[r.Pattern()] = true
	}
	return m
}()

// New returns a server of the services svc, each the implementation of one
// of the API's interfaces; access says who may connect.
func New(svc ipc.Services, access AccessFunc, log *zap.Logger, opts ...Options) *Server {
	var opt Options
	if len(opts) > 0 {
		opt = opts[0]
	}
	s := &Server{
		svc: svc, version: svc.System.Version(context.Background()).Version,
		log: log.Named("api"), access: access, limits: opt.Limits, timeouts: DefaultTimeouts(),
		mux: http.NewServeMux(), routes: map[string]bool{},
		metrics: opt.Metrics, observe: opt.Observe,
	}
	s.register()
	// A path the API has, asked with another method, is a 404 too (there
	// is no 405), which says the methods it takes.
	methods := map[string][]string{}
	for p := range s.routes {
		m, path, _ := strings.Cut(p, " ")
		methods[path] = append(methods[path], m)
	}
	paths := http.NewServeMux()
	for path := range methods {
		slices.Sort(methods[path])
		paths.HandleFunc(path, func(http.ResponseWriter, *http.Request) {})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if _, p := paths.Handler(r); p != "" {
			writeError(w, ipc.NotFound("no such endpoint: %s %s (it takes %s)", r.Method, r.URL.Path, strings.Join(methods[p], ", ")))
			return
		}
		writeError(w, ipc.NotFound("no such endpoint: %s %s (the API is under /%s)", r.Method, r.URL.Path, ipc.APIVersion))
	})
	s.http = &http.Server{
		Handler:     s.timeouts.BoundBody(s),
		ConnContext: connContext,
		ErrorLog:    zap.NewStdLog(s.log),
	}
	// Header and idle timeouts, none on whole requests: streams (logs -f,
	// events -f) are bounded per write instead (Timeouts.Stream).
	s.timeouts.Apply(s.http)
	return s
}

// handle registers a route; registering a pattern twice panics, as a
// duplicate is a programming error.
func (s *Server) handle(pattern string, h handler) {
	if s.routes[pattern] {
		panic("server: route registered twice: " + pattern)
	}
	if !documented[pattern] && !strings.HasPrefix(pattern, "GET /debug/") {
		// The API is ipc.Routes: what /v1/openapi.json says is what there is.
		panic("server: route not in ipc.Routes: " + pattern)
	}
	s.routes[pattern] = true
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(callerKey{}).(ipc.Caller)
		if err := h(w, r, c); err != nil {
			var e *ipc.Error
			if !errors.As(err, &e) {
				s.log.Error("request failed", zap.String("route", pattern), zap.Error(err))
				e = &ipc.Error{Status: http.StatusInternalServerError, Code: ipc.CodeInternal, Message: err.Error()}
			}
			writeError(w, e)
		}
	})
}

// ServeHTTP checks the caller, then routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.observe != nil {
		rec := &statusRecorder{ResponseWriter: w}
		defer func() { s.observe(routeOf(r), rec.code()) }()
		w = rec
	}
	w.Header().Set(ipc.VersionHeader, s.version)
	if warn := s.svc.System.Warning(); warn != "" {
		w.Header().Set(ipc.WarningHeader, warn)
	}
	c, ok := r.Context().Value(callerKey{}).(ipc.Caller)
	if !ok {
		s.log.Warn("refused connection without peer credentials", zap.String("path", r.URL.Path))
		writeError(w, ipc.Forbidden("peer credentials unavailable"))
		return
	}
	if !s.access(c) {
		s.log.Warn("refused caller", zap.Int("uid", c.UID), zap.Int("pid", c.PID), zap.String("path", r.URL.Path))
		writeError(w, ipc.Forbidden("uid %d may not use this sessiond", c.UID))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodySize)
	s.mux.ServeHTTP(w, r)
}

// Serve accepts connections on l until Shutdown or Close is called, within
// the server's bounds on connections (a Listener around l).
func (s *Server) Serve(l net.Listener) error {
	if _, ok := l.(*Listener); !ok {
		l = NewListener(l, s.limits, listenerCredentials, s.log)
	}
	s.connsMu.Lock()
	s.conns = l.(*Listener)
	s.connsMu.Unlock()
	err := s.http.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, and waits for requests in flight until ctx is
// done. Streams end when their backend closes them.
func (s *Server) Shutdown(ctx context.Context) error {
	s.streams.closeAll()
	return s.http.Shutdown(ctx)
}

// Close closes the listener and every connection at once.
func (s *Server) Close() error {
	s.streams.closeAll()
	return s.http.Close()
}

type callerKey struct{}

// connContext attaches the peer's identity, as the listener learnt it, to
// every request of the connection.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if p, ok := PeerOf(c); ok {
		return context.WithValue(ctx, callerKey{}, ipc.Caller{UID: p.UID, GID: p.GID, PID: p.PID})
	}
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

func listenerCredentials(c *net.UnixConn) (Peer, error) {
	caller, err := peerCredentials(c)
	return Peer{UID: caller.UID, GID: caller.GID, PID: caller.PID}, err
}

// decodeBody decodes a JSON request body strictly: unknown fields, trailing
// data and bodies over MaxBodySize are errors. An empty body decodes to the
// zero value.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		if errors.As(err, &mbe) || (errors.As(err, &ne) && ne.Timeout()) {
			return bodyError(err)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return ipc.BadRequest("malformed JSON body at byte %d: %w", se.Offset, err)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return ipc.BadRequest("the body: want a JSON object, got JSON %s", te.Value)
			}
			return ipc.BadRequest("field %q: want %s, got JSON %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return ipc.BadRequest("malformed JSON body: %w", err)
	}
	if dec.More() {
		return ipc.BadRequest("malformed JSON body: data after the object")
	}
	return nil
}

// jsonKind names the JSON a Go type takes, for an error a client reads:
// "an object", not a Go type's name.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another value"
}

func boolParam(v, name string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, ipc.BadRequest("%s: want 1/0 or true/false, got %q", name, v)
	}
	return b, nil
}

func intParam(v, name string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, ipc.BadRequest("%s: want a non-negative number, got %q", name, v)
	}
	return n, nil
}

// writeJSON writes v as the compact JSON response with status: sessionctl
// indents what it shows, and jq does for curl.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	writeEncoded(w, status, b)
	return nil
}

// writeEncoded writes the JSON b, as writeJSON does v, and a newline: in
// one write of b where b has room for it (a newline of its own was a
// third write of the answer, and one more wake-up of the client waiting
// for its last byte), else apart (appended, it would copy a listing of a
// thousand sessions, some 300 KB, once more). b is the caller's no more.
func writeEncoded(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	if len(b) < cap(b) {
		_, _ = w.Write(append(b, '\n'))
		return
	}
	_, _ = w.Write(b)
	_, _ = w.Write(newline)
}

var newline = []byte{'\n'}

func writeError(w http.ResponseWriter, e *ipc.Error) {
	status := e.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	_ = writeJSON(w, status, ipc.ErrorBody{Error: e.Message, Code: e.Code, Candidates: e.Candidates})
}

// bodyError is the answer to a body that could not be read: too large, or
// not all there within the body's timeout.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &ipc.Error{Status: http.StatusRequestEntityTooLarge, Code: ipc.CodeTooLarge,
			Message: fmt.Sprintf("request body is over the limit of %d bytes", mbe.Limit)}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ipc.BadRequest("the request body did not arrive within %s", BodyReadTimeout)
	}
	return ipc.BadRequest("read the request body: %w", err)
}
