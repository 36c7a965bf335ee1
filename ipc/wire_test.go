package ipc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// wireServer serves h on a Unix socket in a temporary directory and counts
// the connections it accepted and has open.
type wireServer struct {
	sock     string
	srv      *http.Server
	accepted atomic.Int32
	open     atomic.Int32
	maxOpen  atomic.Int32
}

func serveWire(t *testing.T, h http.Handler, idle time.Duration) *wireServer {
	t.Helper()
	ws := &wireServer{sock: filepath.Join(t.TempDir(), "s.sock")}
	l, err := net.Listen("unix", ws.sock)
	if err != nil {
		t.Fatal(err)
	}
	ws.srv = &http.Server{Handler: h, IdleTimeout: idle, ConnState: func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			ws.accepted.Add(1)
			n := ws.open.Add(1)
			for {
				m := ws.maxOpen.Load()
				if n <= m || ws.maxOpen.CompareAndSwap(m, n) {
					break
				}
			}
		case http.StateClosed, http.StateHijacked:
			ws.open.Add(-1)
		}
	}}
	go func() { _ = ws.srv.Serve(l) }()
	t.Cleanup(func() { _ = ws.srv.Close() })
	return ws
}

func TestWireReusesConnections(t *testing.T) {
	ws := serveWire(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"version":%q}`, r.Method)
	}), time.Minute)
	c := &Client{Socket: ws.sock}
	defer c.Close()
	for i := 0; i < 5; i++ {
		v, err := c.Version(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if v.Version != "GET" {
			t.Fatalf("version %q", v.Version)
		}
	}
	if n := ws.accepted.Load(); n != 1 {
		t.Errorf("5 requests in turn took %d connections, want 1", n)
	}
}

// A connection the daemon closed while it was idle is not used again: the
// request after the daemon's idle timeout goes on a new one, a POST too.
func TestWireIdleConnectionClosedByDaemon(t *testing.T) {
	ws := serveWire(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, `{"version":%q}`, r.Method+" "+string(b))
	}), 30*time.Millisecond)
	c := &Client{Socket: ws.sock}
	defer c.Close()
	for i := 0; i < 3; i++ {
		if _, err := c.Version(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
		v, err := do[Version](context.Background(), c, "POST", "/version", nil, map[string]int{"n": i})
		if err != nil {
			t.Fatalf("POST after the daemon closed the idle connection: %v", err)
		}
		if want := fmt.Sprintf(`POST {"n":%d}`, i); v.Version != want {
			t.Fatalf("got %q, want %q", v.Version, want)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

func TestWireChunkedAndLongBodies(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	ws := serveWire(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("length") == "1" {
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			_, _ = w.Write(big)
			return
		}
		fl := w.(http.Flusher)
		for off := 0; off < len(big); off += 7777 {
			_, _ = w.Write(big[off:min(off+7777, len(big))])
			fl.Flush()
		}
	}), time.Minute)
	c := &Client{Socket: ws.sock}
	defer c.Close()
	for _, target := range []string{"/chunked", "/whole?length=1", "/chunked", "/whole?length=1"} {
		resp, err := c.Raw(context.Background(), Request{Method: "GET", Target: target})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("%s: read %d bytes (%v), want the %d sent", target, len(got), err, len(big))
		}
	}
	if n := ws.accepted.Load(); n != 1 {
		t.Errorf("4 whole bodies read took %d connections, want 1", n)
	}
}

// A stream ends when its context does, and when another goroutine closes
// it, whichever comes first, without waiting for the daemon.
func TestWireStreamEnds(t *testing.T) {
	ws := serveWire(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}), time.Minute)
	c := &Client{Socket: ws.sock}
	defer c.Close()
	for _, how := range []string{"context", "close"} {
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := c.Raw(ctx, Request{Method: "GET", Target: "/stream"})
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || line != "first\n" {
			t.Fatalf("%s: first line %q, %v", how, line, err)
		}
		ended := make(chan error, 1)
		go func() {
			_, err := br.ReadString('\n')
			ended <- err
		}()
		time.Sleep(50 * time.Millisecond)
		if how == "context" {
			cancel()
		} else {
			resp.Body.Close()
		}
		select {
		case err := <-ended:
			if err == nil {
				t.Errorf("%s: the read ended without an error", how)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the blocked read did not end", how)
		}
		resp.Body.Close()
		cancel()
	}
	// A context that ends before the answer is the context's error.
	slow := serveWire(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }), time.Minute)
	sc := &Client{Socket: slow.sock}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := sc.Version(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request past its context: %v, want the deadline", err)
	}
}

// Requests beyond maxConns at once wait for a connection.
func TestWireBoundsConnections(t *testing.T) {
	release := make(chan struct{})
	ws := serveWire(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = io.WriteString(w, `{}`)
	}), time.Minute)
	c := &Client{Socket: ws.sock}
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, maxConns+8)
	for i := 0; i < maxConns+8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Version(context.Background())
			errs <- err
		}()
	}
	time.Sleep(300 * time.Millisecond)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := ws.maxOpen.Load(); n > maxConns {
		t.Errorf("%d connections at once, want at most %d", n, maxConns)
	}
}

// scripted answers every connection with the bytes given, then closes it.
func scripted(t *testing.T, answer string) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = io.WriteString(conn, answer)
			}()
		}
	}()
	return &Client{Socket: sock}
}

func TestWireMalformedAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, answer, want string
	}{
		{"not http", "SSH-2.0-OpenSSH\r\n\r\n", "not HTTP/1.1"},
		{"no status", "HTTP/1.1 abc OK\r\n\r\n", "no status"},
		{"header line", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header"},
		{"cut headers", "HTTP/1.1 200 OK\r\nContent-Type: app", "unexpected EOF"},
		{"cut body", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"version\":", "unexpected EOF"},
		{"chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"},
		{"chunk end", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}xx\r\n", "longer than its size"},
		{"encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "transfer encoding"},
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"},
		{"huge header", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxHeader) + "\r\n\r\n", "line too long"},
		{"error body", "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops", "daemon answered 500 Internal Server Error: oops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := scripted(t, tc.answer)
			defer c.Close()
			_, err := c.Version(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	// A close-delimited body and a chunked one with a trailer read whole.
	for _, answer := range []string{
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"version\":\"v1\"}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\n{\"ver\r\nb\r\nsion\":\"v1\"}\r\n0\r\nX-Trailer: 1\r\n\r\n",
	} {
		c := scripted(t, answer)
		v, err := c.Version(context.Background())
		if err != nil || v.Version != "v1" {
			t.Fatalf("%q: %+v, %v", answer, v, err)
		}
		c.Close()
	}
}

// FuzzWireAnswer feeds the answer reader arbitrary bytes: it returns an
// answer or an error, never panics, and reads no more than it was given.
func FuzzWireAnswer(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 204 No Content\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 200 OK\r\n\r\nrest"))
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		resp, err := readHead(br)
		if err != nil {
			return
		}
		b := &body{c: &Client{}, w: &wire{Conn: nopConn{}, br: br}, stop: func() bool { return true }}
		b.c.pool.init()
		b.c.pool.tokens <- struct{}{}
		if err := frame(b, resp, br, "GET"); err != nil {
			return
		}
		if b.r == nil {
			return
		}
		n, _ := io.Copy(io.Discard, b.r)
		if n > int64(len(data)) {
			t.Fatalf("read %d body bytes from %d", n, len(data))
		}
	})
}

type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }
