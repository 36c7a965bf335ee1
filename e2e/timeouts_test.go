package e2e

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// peerOpen reports whether the other end of the Unix connection c, the
// daemon's, is still open (ss lists a socket whose peer is c's).
func peerOpen(t *testing.T, c net.Conn) bool {
	t.Helper()
	f, err := c.(*net.UnixConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	ino := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
	out, err := exec.Command("ss", "-xH").Output()
	if err != nil {
		t.Fatalf("ss: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == ino {
			return true
		}
	}
	return false
}

// trickle writes s to c one byte a second until it is written, c fails or
// stop is closed.
func trickle(c net.Conn, s string, stop <-chan struct{}) {
	for i := range len(s) {
		select {
		case <-stop:
			return
		case <-time.After(time.Second):
		}
		if _, err := c.Write([]byte{s[i]}); err != nil {
			return
		}
	}
}

// closedWithin reports how long the daemon took to close c (a read that
// ends), failing the test past limit.
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) (time.Duration, string) {
	t.Helper()
	began := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	b, err := io.ReadAll(c)
	took := time.Since(began)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was still open after %s", took.Round(time.Second))
	}
	return took, string(b)
}

// TestTimeoutsHoldAgainstAOneByteClient: a client that sends or reads one
// byte a second holds a connection no longer than the documented bound
// of each phase: headers 5 s, a body 10 s, a keep-alive connection's
// quiet 30 s, a stream's write 30 s.
func TestTimeoutsHoldAgainstAOneByteClient(t *testing.T) {
	d := startDaemon(t)
	dial := func(t *testing.T) net.Conn {
		c, err := net.Dial("unix", d.sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("headers", func(t *testing.T) {
		t.Parallel()
		c, stop := dial(t), make(chan struct{})
		defer close(stop)
		go trickle(c, "GET /v1/version HTTP/1.1\r\nHost: sessiond\r\nX-Slow: "+strings.Repeat("a", 100)+"\r\n\r\n", stop)
		took, _ := closedWithin(t, c, 15*time.Second)
		t.Logf("headers at a byte a second: closed after %s", took.Round(100*time.Millisecond))
		if took > 7*time.Second {
			t.Errorf("headers at a byte a second held the connection %s, want 5 s", took)
		}
	})
	t.Run("body", func(t *testing.T) {
		t.Parallel()
		c, stop := dial(t), make(chan struct{})
		defer close(stop)
		if _, err := io.WriteString(c, "POST /v1/sessions HTTP/1.1\r\nHost: sessiond\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		go trickle(c, strings.Repeat(" ", 1000), stop)
		took, answer := closedWithin(t, c, 20*time.Second)
		t.Logf("a body at a byte a second: closed after %s", took.Round(100*time.Millisecond))
		if took > 12*time.Second || !strings.Contains(answer, "did not arrive within 10s") {
			t.Errorf("a trickling body: closed after %s with %q, want an answer saying so at 10 s", took, answer)
		}
	})
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		c := dial(t)
		if _, err := io.WriteString(c, "GET /v1/version HTTP/1.1\r\nHost: sessiond\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, "200") {
			t.Fatalf("first answer: %q %v", line, err)
		}
		began := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(45 * time.Second))
		_, err = io.ReadAll(br)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("an idle keep-alive connection was still open after %s", time.Since(began).Round(time.Second))
		}
		t.Logf("idle: closed after %s", time.Since(began).Round(100*time.Millisecond))
		if took := time.Since(began); took > 33*time.Second {
			t.Errorf("an idle connection was held %s, want 30 s", took)
		}
	})
	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		id := d.start("--checkpoint", "", project(t), "--", "sh", "-c", "while :; do echo "+strings.Repeat("x", 200)+"; done")
		c := dial(t)
		if _, err := io.WriteString(c, "GET /v1/sessions/"+id+"/logs?follow=true HTTP/1.1\r\nHost: sessiond\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		buf := make([]byte, 1)
		for peerOpen(t, c) {
			if time.Since(began) > 40*time.Second {
				t.Fatalf("a follower reading a byte a second was still served after %s", time.Since(began).Round(time.Second))
			}
			if _, err := c.Read(buf); err != nil {
				break
			}
			time.Sleep(time.Second)
		}
		t.Logf("a follower at a byte a second: cut after %s", time.Since(began).Round(100*time.Millisecond))
		d.ctl("stop", id)
	})
}
