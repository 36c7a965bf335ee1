package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// The fake backend's terminal: "tty" has one, whose holder echoes what the
// viewer types back as output; every other session has none.
var sent struct {
	mu  sync.Mutex
	req []ipc.SendRequest
}

func (b *backend) SessionScreen(ctx context.Context, c ipc.Caller, id string, opt ipc.ScreenOptions) (*ipc.TermScreen, error) {
	if id != "tty" {
		return nil, ipc.Conflict("session %s has no terminal", id)
	}
	return &ipc.TermScreen{Size: ipc.TermSize{Cols: 80, Rows: 2}, Lines: []string{"$ hello", ""}, Scrollback: make([]string, opt.Scrollback)}, nil
}

func (b *backend) SendSession(ctx context.Context, c ipc.Caller, id string, req ipc.SendRequest) error {
	if id != "tty" {
		return ipc.Conflict("session %s has no terminal", id)
	}
	sent.mu.Lock()
	sent.req = append(sent.req, req)
	sent.mu.Unlock()
	return nil
}

func (b *backend) AttachSession(ctx context.Context, c ipc.Caller, id string, opt ipc.AttachOptions) (io.ReadWriteCloser, *ipc.TermStatus, error) {
	if id != "tty" {
		return nil, nil, ipc.Conflict("session %s has no terminal; follow its output with: sessionctl logs -f %s", id, id)
	}
	daemonEnd, holderEnd := net.Pipe()
	go func() {
		defer holderEnd.Close()
		fr := ipc.NewTermFrameReader(holderEnd)
		for {
			f, err := fr.Next()
			if err != nil || f.Type == ipc.TermFrameDetach {
				return
			}
			if f.Type == ipc.TermFrameData {
				if err := ipc.WriteTermFrame(holderEnd, ipc.TermFrameData, append([]byte("echo:"), f.Payload...)); err != nil {
					return
				}
			}
		}
	}()
	return daemonEnd, &ipc.TermStatus{HolderPID: 1, ChildPID: 2, Size: ipc.TermSize{Cols: 80, Rows: 24}, Writer: !opt.ReadOnly, Viewers: 1}, nil
}

func TestAttachSplicesTheStream(t *testing.T) {
	c, _ := serve(t, &backend{}, nil)
	ctx := context.Background()
	conn, st, err := c.Attach(ctx, "tty", ipc.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if st.Size.Cols != 80 || !st.Writer {
		t.Errorf("status %+v, want 80 columns and the writer", st)
	}
	fr := ipc.NewTermFrameReader(conn)
	for _, keys := range []string{"ls\r", "exit\r"} {
		if err := ipc.WriteTermFrame(conn, ipc.TermFrameData, []byte(keys)); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		f, err := fr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Type != ipc.TermFrameData || string(f.Payload) != "echo:"+keys {
			t.Fatalf("got %s %q, want the echo of %q", f.Type, f.Payload, keys)
		}
	}
	// A detach ends the holder's side, and the daemon closes the viewer's.
	if err := ipc.WriteTermFrame(conn, ipc.TermFrameDetach, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after detach: %v, want the stream to end", err)
	}
}

func TestAttachRefusals(t *testing.T) {
	c, sock := serve(t, &backend{}, nil)
	_, _, err := c.Attach(context.Background(), "plain", ipc.AttachOptions{})
	var ae *ipc.Error
	if !errors.As(err, &ae) || ae.Code != ipc.CodeConflict || !strings.Contains(ae.Message, "logs -f") {
		t.Fatalf("attach to a plain session: %v, want a conflict that offers logs -f", err)
	}
	// A plain GET, without the upgrade, is refused and says what is missing.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://sessiond/v1/sessions/tty/attach")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Upgrade") {
		t.Fatalf("attach without upgrade: %s %s", resp.Status, body)
	}
	if _, _, err := c.Attach(context.Background(), "tty?x", ipc.AttachOptions{}); err == nil {
		t.Fatal("attach to a bad id succeeded")
	}
}

func TestScreenAndSend(t *testing.T) {
	c, _ := serve(t, &backend{}, nil)
	ctx := context.Background()
	scr, err := c.Screen(ctx, "tty", 3)
	if err != nil {
		t.Fatal(err)
	}
	if scr.Text() != "$ hello\n" || len(scr.Scrollback) != 3 {
		t.Fatalf("screen %+v", scr)
	}
	if _, err := c.Screen(ctx, "tty", ipc.MaxTermScrollback+1); err == nil || !strings.Contains(err.Error(), "scrollback") {
		t.Fatalf("too much scrollback: %v", err)
	}
	if err := c.Send(ctx, "tty", ipc.SendRequest{Text: "yes", Enter: true}); err != nil {
		t.Fatal(err)
	}
	sent.mu.Lock()
	last := sent.req[len(sent.req)-1]
	sent.mu.Unlock()
	if last.Text != "yes" || !last.Enter {
		t.Fatalf("sent %+v", last)
	}
	for _, bad := range []ipc.SendRequest{{}, {Text: strings.Repeat("x", ipc.MaxTermSendText+1)}} {
		var ae *ipc.Error
		if err := c.Send(ctx, "tty", bad); !errors.As(err, &ae) || ae.Code != ipc.CodeBadRequest {
			t.Errorf("send %.20q: %v, want a bad request", bad.Text, err)
		}
	}
	if err := c.Send(ctx, "plain", ipc.SendRequest{Text: "x"}); err == nil {
		t.Error("send to a plain session succeeded")
	}
}

// Shutdown ends the attached streams, which the HTTP server does not know.
func TestShutdownEndsAttachedStreams(t *testing.T) {
	dir, err := os.MkdirTemp("", "ipc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	l, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(services(&backend{}), func(ipc.Caller) bool { return true }, zap.NewNop())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	c := &ipc.Client{Socket: sock}
	defer c.Close()
	conn, _, err := c.Attach(context.Background(), "tty", ipc.AttachOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ended := make(chan error, 1)
	go func() {
		_, err := ipc.NewTermFrameReader(conn).Next()
		ended <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	<-served
	select {
	case err := <-ended:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("the stream ended with %v, want EOF", err)
		}
	case <-ctx.Done():
		t.Fatal("the attached stream outlived the server's shutdown")
	}
}
