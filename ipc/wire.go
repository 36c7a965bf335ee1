package ipc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The client speaks HTTP/1.1 on the connection itself: it writes one
// request and reads one answer, on the caller's goroutine. net/http's
// Transport would bring crypto/tls, x509 and HTTP/2 into every sessionctl
// command's start-up, and a dial goroutine and a read and a write loop
// into every request, for a socket that only ever speaks plain HTTP/1.1.

// Response is the daemon's answer to one request. The caller closes Body;
// a body read to its end gives its connection back for the next request.
type Response struct {
	StatusCode int
	// Status is the status line's code and text ("404 Not Found").
	Status string
	Header textproto.MIMEHeader
	Body   io.ReadCloser
}

// Request is one request as Raw sends it.
type Request struct {
	Method string
	// Target is the path and query ("/v1/sessions?all=1").
	Target string
	Header textproto.MIMEHeader
	Body   []byte
}

const (
	// maxConns bounds the client's connections at once: requests beyond
	// it wait their turn here rather than meet the daemon's cap.
	maxConns = 32
	// maxIdle bounds the connections kept for the next request.
	maxIdle = 8
	// idleKeep is how long an idle connection is kept: less than the
	// server's idle timeout (30 s), so that a kept one is still open.
	idleKeep = 20 * time.Second
	// maxHeader bounds an answer's status line and headers.
	maxHeader = 1 << 20
)

// wire is a connection to the daemon and what has been read ahead of it.
type wire struct {
	net.Conn
	br     *bufio.Reader
	reused bool
	idleAt time.Time
}

// pool holds the client's idle connections and the tokens of its
// connections at once.
type pool struct {
	once   sync.Once
	tokens chan struct{}
	mu     sync.Mutex
	idle   []*wire
}

func (p *pool) init() {
	p.once.Do(func() { p.tokens = make(chan struct{}, maxConns) })
}

// acquire waits for a connection's token.
func (p *pool) acquire(ctx context.Context) error {
	p.init()
	select {
	case p.tokens <- struct{}{}:
		return nil
	default:
	}
	select {
	case p.tokens <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pool) release() { <-p.tokens }

// take returns an idle connection that is still open, or nil.
func (p *pool) take() *wire {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.idle) > 0 {
		w := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if time.Since(w.idleAt) < idleKeep && w.br.Buffered() == 0 && open(w.Conn) {
			w.reused = true
			return w
		}
		w.Close()
	}
	return nil
}

// put keeps w for the next request, or closes it.
func (p *pool) put(w *wire) {
	w.idleAt = time.Now()
	p.mu.Lock()
	if len(p.idle) < maxIdle {
		p.idle = append(p.idle, w)
		w = nil
	}
	p.mu.Unlock()
	if w != nil {
		w.Close()
	}
}

// closeIdle closes the idle connections.
func (p *pool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		w.Close()
	}
}

// open says whether an idle connection is still open: the daemon closes
// one that waited past its idle timeout, and a request written to it
// would get no answer.
func open(c net.Conn) bool {
	switch c := c.(type) {
	case interface{ ended() bool }:
		return !c.ended()
	case syscall.Conn:
		raw, err := c.SyscallConn()
		if err != nil {
			return false
		}
		alive := false
		var b [1]byte
		_ = raw.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			// Nothing to read is an open connection; an end (0) or
			// bytes nobody asked for are not.
			alive = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
			return true
		})
		return alive
	}
	return true
}

// Raw sends a request as it is and returns the answer whatever its
// status: for what passes requests on (sessionctl ui over several hosts).
func (c *Client) Raw(ctx context.Context, req Request) (*Response, error) {
	return c.roundTrip(ctx, req)
}

// roundTrip sends req on an idle connection or a new one and reads the
// answer's status and headers. A kept connection that the daemon closed
// meanwhile, found so before any of the answer, is replaced by a new one
// for a request that may be sent twice (GET, HEAD).
func (c *Client) roundTrip(ctx context.Context, req Request) (*Response, error) {
	if err := c.pool.acquire(ctx); err != nil {
		return nil, err
	}
	for {
		w := c.pool.take()
		if w == nil {
			conn, err := c.dialDaemon(ctx)
			if err != nil {
				c.pool.release()
				return nil, err
			}
			w = &wire{Conn: conn, br: bufio.NewReaderSize(conn, wireBuffer)}
		}
		resp, err := c.exchange(ctx, w, req)
		if err == nil {
			return resp, nil
		}
		w.Close()
		var fresh *freshError
		if w.reused && errors.As(err, &fresh) && (req.Method == "GET" || req.Method == "HEAD") && ctx.Err() == nil {
			continue
		}
		c.pool.release()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.As(err, &fresh) {
			err = fresh.err
		}
		if ssh, ok := w.Conn.(*sshConn); ok {
			return nil, ssh.cut(err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("sessiond closed the connection before it answered %s %s; it stopped or crashed, and the next daemon finishes what it had recorded (a stop, for one): %w", req.Method, req.Target, err)
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.Target, err)
	}
}

// wireBuffer is a connection's read buffer: an answer's head fits, and a
// body read into a buffer at least as large (readBody's) bypasses it. A
// short-lived command touches every page it allocates, each a page fault.
const wireBuffer = 4 << 10

// freshError is a failure before any byte of the answer arrived.
type freshError struct{ err error }

func (e *freshError) Error() string { return e.err.Error() }

// exchange writes req on w and reads the answer's head; its body reads on
// from w, which goes back to the pool once the body is read to its end.
func (c *Client) exchange(ctx context.Context, w *wire, req Request) (*Response, error) {
	stop := context.AfterFunc(ctx, func() { w.Close() })
	if err := writeRequest(w.Conn, req); err != nil {
		stop()
		return nil, &freshError{err}
	}
	if _, err := w.br.Peek(1); err != nil {
		stop()
		return nil, &freshError{err}
	}
	resp, err := readHead(w.br)
	if err != nil {
		stop()
		return nil, err
	}
	b := &body{c: c, w: w, stop: stop, keep: keepAlive(resp)}
	if err := frame(b, resp, w.br, req.Method); err != nil {
		stop()
		return nil, err
	}
	resp.Body = b
	if b.r == nil {
		b.finish(b.keep, io.EOF)
	}
	return resp, nil
}

// writeRequest writes req as HTTP/1.1 in one write.
func writeRequest(conn io.Writer, req Request) error {
	var b bytes.Buffer
	b.Grow(128 + len(req.Body))
	b.WriteString(req.Method)
	b.WriteByte(' ')
	b.WriteString(req.Target)
	b.WriteString(" HTTP/1.1\r\nHost: sessiond\r\n")
	for k, vs := range req.Header {
		for _, v := range vs {
			if strings.ContainsAny(k+v, "\r\n") {
				return fmt.Errorf("header %q: a line break in it", k)
			}
			b.WriteString(k)
			b.WriteString(": ")
			b.WriteString(v)
			b.WriteString("\r\n")
		}
	}
	if req.Body != nil || req.Method == "POST" || req.Method == "PUT" || req.Method == "PATCH" {
		b.WriteString("Content-Length: ")
		b.WriteString(strconv.Itoa(len(req.Body)))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	b.Write(req.Body)
	_, err := conn.Write(b.Bytes())
	return err
}

// readHead reads an answer's status line and headers, at most maxHeader
// bytes of them.
func readHead(br *bufio.Reader) (*Response, error) {
	left := maxHeader
	line, err := headerLine(br, &left)
	if err != nil {
		return nil, fmt.Errorf("read the daemon's answer: %w", err)
	}
	proto, status, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") {
		return nil, fmt.Errorf("the daemon's answer is not HTTP/1.1: %q", cutLine(line))
	}
	code, _, _ := strings.Cut(status, " ")
	n, err := strconv.Atoi(code)
	if err != nil || len(code) != 3 || n < 100 {
		return nil, fmt.Errorf("the daemon's answer has no status: %q", cutLine(line))
	}
	h := textproto.MIMEHeader{}
	for {
		line, err := headerLine(br, &left)
		if err != nil {
			return nil, fmt.Errorf("read the daemon's answer's headers: %w", err)
		}
		if line == "" {
			return &Response{StatusCode: n, Status: status, Header: h}, nil
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("the daemon's answer has a malformed header line %q", cutLine(line))
		}
		k = textproto.CanonicalMIMEHeaderKey(k)
		h[k] = append(h[k], strings.TrimSpace(v))
	}
}

// headerLine reads one line, its CR LF or LF taken off, charging its length
// to *left.
func headerLine(br *bufio.Reader, left *int) (string, error) {
	var b []byte
	for {
		frag, err := br.ReadSlice('\n')
		*left -= len(frag)
		if *left < 0 {
			return "", errors.New("line too long")
		}
		if err == bufio.ErrBufferFull {
			b = append(b, frag...)
			continue
		}
		if err != nil {
			return "", noEOF(err)
		}
		if b != nil {
			frag = append(b, frag...)
		}
		frag = bytes.TrimSuffix(frag, []byte("\n"))
		return string(bytes.TrimSuffix(frag, []byte("\r"))), nil
	}
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// keepAlive says whether the connection may carry another request after
// this answer.
func keepAlive(resp *Response) bool {
	for _, v := range resp.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "close") {
				return false
			}
		}
	}
	return resp.StatusCode != 101
}

// frame sets b's reader to the answer's body as its headers delimit it; no
// reader is no body.
func frame(b *body, resp *Response, br *bufio.Reader, method string) error {
	switch {
	case method == "HEAD" || resp.StatusCode == 204 || resp.StatusCode == 304 || resp.StatusCode/100 == 1:
		return nil
	case resp.Header.Get("Transfer-Encoding") != "":
		if !strings.EqualFold(resp.Header.Get("Transfer-Encoding"), "chunked") {
			return fmt.Errorf("the daemon's answer has a transfer encoding this client does not read: %q", resp.Header.Get("Transfer-Encoding"))
		}
		b.r = &chunked{br: br}
	case resp.Header.Get("Content-Length") != "":
		n, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("the daemon's answer has a bad Content-Length: %q", resp.Header.Get("Content-Length"))
		}
		if n == 0 {
			return nil
		}
		b.r = io.LimitReader(br, n)
	default:
		// Up to the connection's end.
		b.r = br
		b.keep = false
	}
	return nil
}

// body is an answer's body: at its end the connection goes back to the
// pool; closed early, the connection is closed (which ends a read another
// goroutine is blocked in).
type body struct {
	c    *Client
	w    *wire
	r    io.Reader
	stop func() bool
	keep bool

	mu   sync.Mutex
	done bool
	err  error // what a read after the end returns
}

// errClosedBody is a read of a body after its Close.
var errClosedBody = errors.New("read of a closed answer")

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	done, derr := b.done, b.err
	b.mu.Unlock()
	if done {
		return 0, derr
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		if lr, ok := b.r.(*io.LimitedReader); ok && lr.N > 0 {
			err = io.ErrUnexpectedEOF
		}
	}
	switch {
	case err == io.EOF:
		b.finish(b.keep, io.EOF)
	case err != nil:
		if ssh, ok := b.w.Conn.(*sshConn); ok && !errors.Is(err, errClosedBody) && !errors.Is(err, os.ErrClosed) {
			err = ssh.cut(err)
		}
		b.finish(false, err)
		b.mu.Lock()
		err = b.err
		b.mu.Unlock()
	}
	return n, err
}

// Close ends the body; a body not read to its end closes its connection.
func (b *body) Close() error {
	b.finish(false, errClosedBody)
	return nil
}

// finish gives the connection back (keep) or closes it, once; reads after
// it return err.
func (b *body) finish(keep bool, err error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done, b.err = true, err
	b.mu.Unlock()
	if !b.stop() {
		// The context's end closed the connection.
		keep = false
	}
	if keep {
		b.c.pool.put(b.w)
	} else {
		b.w.Close()
	}
	b.c.pool.release()
}

// chunked reads a chunked body.
type chunked struct {
	br   *bufio.Reader
	left int64 // of the chunk being read
	end  bool
	err  error
}

// maxChunkLine bounds a chunk's size line.
const maxChunkLine = 4096

func (c *chunked) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	for c.left == 0 && !c.end {
		if err := c.next(); err != nil {
			if err == io.EOF {
				// The connection's end before the last chunk: a cut
				// answer, not a whole one.
				err = io.ErrUnexpectedEOF
			}
			c.err = err
			return 0, err
		}
	}
	if c.end {
		c.err = io.EOF
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		err = c.crlf()
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

// next reads a chunk's size line; the last chunk's trailer is read to its
// empty line.
func (c *chunked) next() error {
	line, err := c.line()
	if err != nil {
		return err
	}
	size, _, _ := strings.Cut(line, ";")
	size = strings.TrimSpace(size)
	n, err := strconv.ParseUint(size, 16, 63)
	if err != nil || size == "" || len(size) > 16 {
		return fmt.Errorf("malformed chunk size %q", cutLine(line))
	}
	if n > 0 {
		c.left = int64(n)
		return nil
	}
	for {
		line, err := c.line()
		if err != nil {
			return err
		}
		if line == "" {
			c.end = true
			return nil
		}
	}
}

// line reads one line of at most maxChunkLine bytes.
func (c *chunked) line() (string, error) {
	left := maxChunkLine
	return headerLine(c.br, &left)
}

// crlf reads the line end after a chunk's data.
func (c *chunked) crlf() error {
	line, err := c.line()
	if err != nil {
		return err
	}
	if line != "" {
		return errors.New("chunk data longer than its size")
	}
	return nil
}
