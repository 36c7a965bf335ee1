package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Default connection limits. A sessionctl command holds one connection;
// a follower (logs -f, events -f) or a dashboard holds one for as long as
// it runs. DefaultMaxConns stays well under the descriptors a daemon has,
// so the descriptors a session's end needs are never the ones the API took.
const (
	DefaultMaxConns       = 512
	DefaultMaxConnsPerUID = 64
)

// Recommended timeouts for the API server.
const (
	// ReadHeaderTimeout bounds the wait for a request's headers, from the
	// connection's first byte (or from its opening: a connection that
	// never sends anything is closed after it).
	ReadHeaderTimeout = 5 * time.Second
	// IdleTimeout bounds how long a keep-alive connection may wait for its
	// next request.
	IdleTimeout = 30 * time.Second
	// BodyReadTimeout bounds reading a request body (BoundBody).
	BodyReadTimeout = 10 * time.Second
	// StreamWriteTimeout bounds each write of a stream (StreamWriter): a
	// follower that stops reading for that long is cut off, one that reads
	// is never.
	StreamWriteTimeout = 30 * time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 64 << 10
)

// rejectTimeout bounds how long answering a connection past the caps may
// take; maxRejecting bounds how many are answered at once (each holds a
// descriptor). Past that, connections are closed unanswered.
const (
	rejectTimeout = time.Second
	maxRejecting  = 32
	maxBackoff    = time.Second
	rejectLogGap  = 10 * time.Second
)

// Limits bound the connections a Listener lets through at once.
type Limits struct {
	Total  int // connections in all; zero or less means DefaultMaxConns
	PerUID int // connections of one peer uid; zero or less means DefaultMaxConnsPerUID
	// Trusted are uids the per-uid cap does not apply to (root and the
	// daemon's own user, whose sessions' agents all run as that user).
	Trusted []int
}

// Peer is the process at the other end of a connection.
type Peer struct {
	UID, GID, PID int
}

// Credentials returns the peer of an accepted Unix connection: SO_PEERCRED
// on Linux, LOCAL_PEERCRED on macOS.
type Credentials func(c *net.UnixConn) (Peer, error)

// Listener wraps the API's Unix socket listener. It caps the connections
// open at once, in total and per peer uid: a connection past a cap gets a
// minimal HTTP 503 ({"error": "...", "code": "unavailable"}) and is
// closed, without reaching the server, so one user's idle connections
// cannot starve another's requests or the daemon's own descriptors. When
// accept fails for want of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM) it
// backs off and retries rather than fail the server, and logs that once
// per episode.
type Listener struct {
	inner net.Listener
	lim   Limits
	creds Credentials
	log   *zap.Logger

	mu     sync.Mutex
	open   int
	perUID map[int]int

	rejecting chan struct{}
	rejecters sync.WaitGroup
	rejected  atomic.Int64
	lastLog   atomic.Int64 // unix nanoseconds of the last refusal logged
	retries   atomic.Int64
	starved   atomic.Int64 // unix nanoseconds when accept began to fail, or 0

	done      chan struct{}
	closeOnce sync.Once
}

// NewListener wraps inner, which must yield *net.UnixConn; creds tells
// each connection's peer. A connection whose peer cannot be told (creds
// nil or failing) counts under uid -1, and PeerOf reports no peer for it.
func NewListener(inner net.Listener, lim Limits, creds Credentials, log *zap.Logger) *Listener {
	if lim.Total <= 0 {
		lim.Total = DefaultMaxConns
	}
	if lim.PerUID <= 0 {
		lim.PerUID = DefaultMaxConnsPerUID
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Listener{
		inner:     inner,
		lim:       lim,
		creds:     creds,
		log:       log,
		perUID:    map[int]int{},
		rejecting: make(chan struct{}, maxRejecting),
		done:      make(chan struct{}),
	}
}

// Conn is a connection a Listener let through. Closing it frees its place.
type Conn struct {
	*net.UnixConn
	peer     Peer
	peerOK   bool
	l        *Listener
	released sync.Once
}

// Close closes the connection and frees its place under the caps.
func (c *Conn) Close() error {
	c.released.Do(func() { c.l.release(c.peer.UID) })
	return c.UnixConn.Close()
}

// Peer returns the connection's peer, and false when it could not be told.
func (c *Conn) Peer() (Peer, bool) { return c.peer, c.peerOK }

// PeerOf returns the peer of a connection a Listener accepted: what an
// http.Server's ConnContext uses instead of asking the kernel again.
func PeerOf(c net.Conn) (Peer, bool) {
	if lc, ok := c.(*Conn); ok {
		return lc.Peer()
	}
	return Peer{}, false
}

// ListenerStats are a Listener's counters.
type ListenerStats struct {
	Open          int   // connections open now
	Rejected      int64 // connections refused past a cap
	AcceptRetries int64 // accepts retried for want of descriptors
}

// Stats returns the listener's counters.
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ListenerStats{Open: l.open, Rejected: l.rejected.Load(), AcceptRetries: l.retries.Load()}
}

// Addr returns the socket's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Close closes the socket and waits for the refusals being answered
// (each within a second).
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.inner.Close()
	})
	l.rejecters.Wait()
	return err
}

// Accept waits for the next connection within the caps.
func (l *Listener) Accept() (net.Conn, error) {
	delay := 5 * time.Millisecond
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if !outOfDescriptors(err) {
				return nil, err
			}
			if !l.wait(err, delay) {
				return nil, net.ErrClosed
			}
			delay = min(2*delay, maxBackoff)
			continue
		}
		l.recovered()
		delay = 5 * time.Millisecond
		uc, ok := c.(*net.UnixConn)
		if !ok {
			c.Close()
			return nil, fmt.Errorf("api listener: accepted a %T, want a Unix connection", c)
		}
		peer := Peer{UID: -1, GID: -1, PID: -1}
		peerOK := false
		if l.creds != nil {
			if p, err := l.creds(uc); err == nil {
				peer, peerOK = p, true
			}
		}
		if reason := l.admit(peer.UID); reason != "" {
			l.reject(uc, peer, reason)
			continue
		}
		return &Conn{UnixConn: uc, peer: peer, peerOK: peerOK, l: l}, nil
	}
}

// outOfDescriptors reports an accept error that goes away once
// descriptors (or kernel memory) are freed.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// wait sleeps before the next accept after err; it returns false when the
// listener was closed meanwhile.
func (l *Listener) wait(err error, delay time.Duration) bool {
	if l.starved.CompareAndSwap(0, time.Now().UnixNano()) {
		l.log.Warn("cannot accept API connections: out of descriptors; retrying until some are freed",
			zap.Error(err), zap.Int("open_connections", l.Stats().Open))
	}
	l.retries.Add(1)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.done:
		return false
	}
}

func (l *Listener) recovered() {
	if since := l.starved.Swap(0); since != 0 {
		l.log.Info("accepting API connections again", zap.Duration("after", time.Since(time.Unix(0, since))))
	}
}

// admit takes a place for a connection of uid, or says why there is none.
func (l *Listener) admit(uid int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.perUID[uid]; n >= l.lim.PerUID && !slices.Contains(l.lim.Trusted, uid) {
		return fmt.Sprintf("uid %d has %d connections open, the most one user may have", uid, n)
	}
	if l.open >= l.lim.Total {
		return fmt.Sprintf("the daemon has %d connections open, the most it accepts", l.open)
	}
	l.open++
	l.perUID[uid]++
	return ""
}

func (l *Listener) release(uid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perUID[uid]--; l.perUID[uid] <= 0 {
		delete(l.perUID, uid)
	}
}

// reject answers a connection past a cap, off the accept loop.
func (l *Listener) reject(c *net.UnixConn, peer Peer, reason string) {
	n := l.rejected.Add(1)
	now := time.Now().UnixNano()
	if last := l.lastLog.Load(); now-last >= int64(rejectLogGap) && l.lastLog.CompareAndSwap(last, now) {
		l.log.Warn("refusing API connections past the cap", zap.String("reason", reason),
			zap.Int("uid", peer.UID), zap.Int("pid", peer.PID), zap.Int64("refused_so_far", n))
	}
	select {
	case l.rejecting <- struct{}{}:
	default:
		c.Close() // too many being answered already: no answer at all
		return
	}
	l.rejecters.Add(1)
	go func() {
		defer l.rejecters.Done()
		defer func() { <-l.rejecting }()
		answerUnavailable(c, reason, l.done)
	}()
}

// answerUnavailable reads the request's head, answers 503 and closes c.
// The head is read first so that the answer follows the request, as an
// HTTP client expects (one that finds a response before it has sent its
// request takes it for a stale connection and retries); the rest is read
// after the answer so that closing does not reset it under the client.
func answerUnavailable(c *net.UnixConn, reason string, done <-chan struct{}) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(rejectTimeout))
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-done:
			_ = c.SetDeadline(time.Now()) // the listener is closing
		case <-stop:
		}
	}()
	if !readHead(c) {
		return
	}
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{reason + ": close idle connections (or wait for them to time out) and retry", "unavailable"})
	body = append(body, '\n')
	resp := fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s", len(body), body)
	if _, err := io.WriteString(c, resp); err != nil {
		return
	}
	_ = c.CloseWrite()
	_, _ = io.CopyN(io.Discard, c, 64<<10)
}

// readHead reads until the end of a request's headers; false means the
// peer sent none (it closed, timed out, or sent more than MaxHeaderBytes).
func readHead(c net.Conn) bool {
	buf := make([]byte, 4096)
	var seen []byte
	for total := 0; total < MaxHeaderBytes; {
		n, err := c.Read(buf)
		total += n
		seen = append(seen, buf[:n]...)
		if bytes.Contains(seen, []byte("\r\n\r\n")) || bytes.Contains(seen, []byte("\n\n")) {
			return true
		}
		if err != nil {
			return false
		}
		if len(seen) > 4 {
			seen = seen[len(seen)-4:] // only the end can complete a terminator
		}
	}
	return false
}

// Timeouts are the time limits of the API server. Streams (logs -f,
// events -f) are why there is no whole-request ReadTimeout or
// WriteTimeout: net/http's WriteTimeout cuts a response that lasts longer,
// and a ReadTimeout that passes while a handler streams cancels the
// request's context (the server's background read of the connection fails
// with it). Instead, a request body is read under BodyRead (BoundBody),
// and each write of a stream under StreamWrite (StreamWriter).
type Timeouts struct {
	ReadHeader  time.Duration
	Idle        time.Duration
	BodyRead    time.Duration
	StreamWrite time.Duration
}

// DefaultTimeouts returns the recommended timeouts.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: ReadHeaderTimeout, Idle: IdleTimeout, BodyRead: BodyReadTimeout, StreamWrite: StreamWriteTimeout}
}

// Apply sets s's ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes, and
// clears its ReadTimeout and WriteTimeout (see Timeouts).
func (t Timeouts) Apply(s *http.Server) {
	s.ReadHeaderTimeout = t.ReadHeader
	s.IdleTimeout = t.Idle
	s.ReadTimeout = 0
	s.WriteTimeout = 0
	s.MaxHeaderBytes = MaxHeaderBytes
}

// BoundBody wraps h so that a request's body must arrive within
// t.BodyRead; a body that trickles in slower fails the handler's read with
// a timeout. The deadline is lifted once the body is read, so a handler
// that streams its response afterwards is not cut.
func (t Timeouts) BoundBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t.BodyRead > 0 && r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(t.BodyRead)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once the whole body is read, and
// only then: a body cut by its deadline (or left unread by its handler)
// keeps it, so that what the server reads of it after the handler (it
// drains a small unread body before answering) is bounded too, and the
// connection is closed rather than held by a client that trickles on.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.lift()
	}
	return n, err
}

func (b *deadlineBody) lift() {
	if !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// StreamWriter writes a long-lived response (a followed log, the event
// stream): each Write gets its own deadline of t.StreamWrite and is
// flushed, so a reader that keeps reading is never cut, however long the
// stream or the quiet between writes, and one that stops reading frees its
// connection once a write has waited that long.
type StreamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// Stream returns a StreamWriter for w.
func (t Timeouts) Stream(w http.ResponseWriter) *StreamWriter {
	return &StreamWriter{w: w, rc: http.NewResponseController(w), timeout: t.StreamWrite}
}

// Write writes p and flushes it under a fresh write deadline.
func (s *StreamWriter) Write(p []byte) (int, error) {
	if s.timeout > 0 {
		if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return 0, err
		}
	}
	n, err := s.w.Write(p)
	if err != nil {
		return n, err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return n, err
	}
	return n, nil
}
