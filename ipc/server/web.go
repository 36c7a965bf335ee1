package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// The web listener serves the same API on a TCP address, for what SSH
// cannot reach (a phone): every request carries a token (Authorization:
// Bearer), which makes it the token's user's, checked by the same access
// rule as a caller of the socket, and bounded by the token's scope. There
// are no cookies, so no request a page of another origin makes can carry
// one; a request that says it comes from another origin is refused all the
// same.

// TokenChecker says who a token acts as, and with what scope ("read" or
// "control").
type TokenChecker interface {
	Check(token string, now time.Time) (ipc.Caller, string, error)
}

// Token scopes, as TokenChecker gives them.
const (
	ScopeRead    = "read"
	ScopeControl = "control"
)

// WebOptions configure the web listener.
type WebOptions struct {
	Tokens TokenChecker
	// Page serves what is not the API (the phone's page); nil: 404.
	Page http.Handler
	// TLS, when set, is the listener's TLS configuration.
	TLS *tls.Config
}

// contentSecurity is every answer's Content-Security-Policy: nothing but
// the listener's own scripts, styles and connections; no frames, no
// forms, no other origin.
const contentSecurity = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// authFailures bounds failed authentications: per remote address, this
// many a minute, then 429 until the minute is over.
const authFailures = 10

type failureBucket struct {
	n     int
	since time.Time
	// checking counts the authentications under way: they count against
	// the bound until they end, so that concurrent guesses cannot pass
	// it together.
	checking int
}

// webHandler is the web listener's handler.
type webHandler struct {
	s   *Server
	opt WebOptions

	mu       sync.Mutex
	failures map[string]*failureBucket
}

// Web returns the web listener's handler.
func (s *Server) Web(opt WebOptions) http.Handler {
	return &webHandler{s: s, opt: opt, failures: map[string]*failureBucket{}}
}

func (h *webHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurity)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	if h.opt.TLS != nil {
		hd.Set("Strict-Transport-Security", "max-age=31536000")
	}
	if !strings.HasPrefix(r.URL.Path, "/"+ipc.APIVersion+"/") {
		if h.opt.Page == nil {
			writeError(w, ipc.NotFound("no such page: %s", r.URL.Path))
			return
		}
		h.opt.Page.ServeHTTP(w, r)
		return
	}
	hd.Set("Cache-Control", "no-store")
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
		h.s.log.Warn("web: refused a request from another origin", zap.String("origin", o), zap.String("remote", r.RemoteAddr))
		writeError(w, ipc.Forbidden("requests from another origin (%s) are refused", ipc.TerminalLine(o)))
		return
	}
	remote := remoteHost(r.RemoteAddr)
	if !h.admit(remote) {
		hd.Set("Retry-After", "60")
		writeError(w, ipc.TooMany("too many failed authentications from %s: try again in a minute", remote))
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		h.failed(remote, r, "no token")
		w.Header().Set("WWW-Authenticate", `Bearer realm="sessiond"`)
		writeError(w, &ipc.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "a token is needed: Authorization: Bearer TOKEN (sessiond token create)"})
		return
	}
	caller, scope, err := h.opt.Tokens.Check(strings.TrimSpace(token), time.Now())
	if err != nil {
		h.failed(remote, r, err.Error())
		w.Header().Set("WWW-Authenticate", `Bearer realm="sessiond", error="invalid_token"`)
		writeError(w, &ipc.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "the token was refused (unknown, revoked or expired)"})
		return
	}
	h.passed(remote)
	hd.Set(ipc.TokenScopeHeader, scope)
	if scope != ScopeControl {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, ipc.Forbidden("a %s token may only read: %s %s needs a control token", scope, r.Method, r.URL.Path))
			return
		}
		if strings.HasSuffix(r.URL.Path, "/attach") {
			// Watch, never type.
			q := r.URL.Query()
			q.Set("read_only", "1")
			r.URL.RawQuery = q.Encode()
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), callerKey{}, caller))
	h.s.ServeHTTP(w, r)
}

// sameOrigin reports whether an Origin header names the listener itself.
func sameOrigin(origin string, r *http.Request) bool {
	o, ok := strings.CutPrefix(origin, "https://")
	if !ok {
		o, ok = strings.CutPrefix(origin, "http://")
	}
	return ok && strings.EqualFold(o, r.Host)
}

func remoteHost(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

// admit says whether remote may try to authenticate: not if its failures
// this minute, with the authentications it has under way, reach the bound.
// An admitted attempt ends in passed or failed.
func (h *webHandler) admit(remote string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.failures[remote]
	if b != nil && time.Since(b.since) >= time.Minute && b.checking == 0 {
		delete(h.failures, remote)
		b = nil
	}
	if b == nil {
		if len(h.failures) > 10000 {
			for k, b := range h.failures {
				if time.Since(b.since) >= time.Minute && b.checking == 0 {
					delete(h.failures, k)
				}
			}
		}
		b = &failureBucket{since: time.Now()}
		h.failures[remote] = b
	}
	if b.n+b.checking >= authFailures {
		return false
	}
	b.checking++
	return true
}

// passed ends an admitted authentication that succeeded.
func (h *webHandler) passed(remote string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.failures[remote]; b != nil {
		b.checking--
		if b.n == 0 && b.checking == 0 {
			delete(h.failures, remote)
		}
	}
}

// failed ends an admitted authentication that failed: it counts and logs it.
func (h *webHandler) failed(remote string, r *http.Request, why string) {
	h.mu.Lock()
	b := h.failures[remote]
	if b == nil {
		b = &failureBucket{since: time.Now()}
		h.failures[remote] = b
	} else {
		b.checking--
	}
	if time.Since(b.since) >= time.Minute {
		// A new minute: its first failure.
		b.n, b.since = 0, time.Now()
	}
	b.n++
	n := b.n
	h.mu.Unlock()
	if n <= authFailures {
		h.s.log.Warn("web: authentication failed", zap.String("remote", remote), zap.String("path", r.URL.Path), zap.String("why", why), zap.Int("failures_this_minute", n))
	}
}

// webUID is the uid the web listener's connections count as, under the
// socket's caps (max_connections, and per user max_connections_per_user):
// who they are is known only once a request shows its token.
const webUID = -2

// webListener admits the web listener's connections under the socket's
// caps, and closes those past them at once.
type webListener struct {
	net.Listener
	s *Server
}

func (w webListener) Accept() (net.Conn, error) {
	for {
		c, err := w.Listener.Accept()
		if err != nil {
			return nil, err
		}
		w.s.connsMu.Lock()
		l := w.s.conns
		w.s.connsMu.Unlock()
		if l == nil {
			return c, nil
		}
		if reason := l.admit(webUID); reason != "" {
			w.s.log.Warn("web: refusing a connection past the cap", zap.String("reason", reason), zap.String("remote", c.RemoteAddr().String()))
			c.Close()
			continue
		}
		return &webConn{Conn: c, l: l}, nil
	}
}

// webConn gives its place back when it closes.
type webConn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

func (c *webConn) Close() error {
	c.once.Do(func() { c.l.release(webUID) })
	return c.Conn.Close()
}

// ServeWeb serves the web listener on l until Shutdown.
func (s *Server) ServeWeb(l net.Listener, opt WebOptions) (*http.Server, <-chan error) {
	l = webListener{Listener: l, s: s}
	hs := &http.Server{Handler: s.timeouts.BoundBody(s.Web(opt)), ErrorLog: zap.NewStdLog(s.log), TLSConfig: opt.TLS}
	s.timeouts.Apply(hs)
	done := make(chan error, 1)
	go func() {
		var err error
		if opt.TLS != nil {
			err = hs.ServeTLS(l, "", "")
		} else {
			err = hs.Serve(l)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	return hs, done
}
