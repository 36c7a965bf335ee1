package ipc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"time"
)

// Screen returns what a tty session's terminal shows, with up to
// scrollback lines of history above it (the screen its command left, once
// it has ended).
func (c *Client) Screen(ctx context.Context, id string, scrollback int) (*TermScreen, error) {
	q := url.Values{}
	if scrollback > 0 {
		q.Set("scrollback", strconv.Itoa(scrollback))
	}
	return do[*TermScreen](ctx, c, "GET", sessionPath(id, "/screen"), q, nil)
}

// Send types text into a tty session's terminal.
func (c *Client) Send(ctx context.Context, id string, req SendRequest) error {
	_, err := do[struct{}](ctx, c, "POST", sessionPath(id, "/send"), nil, req)
	return err
}

// attachHandshake bounds the upgrade of an attach connection.
const attachHandshake = 10 * time.Second

// Attach connects to a tty session's terminal: the connection carries the
// terminal stream (package attach runs it on the user's terminal), and the
// status is the holder's. Refusals (no terminal, an ended session, a
// second writer) are *Error, as for every call.
func (c *Client) Attach(ctx context.Context, id string, opt AttachOptions) (net.Conn, *TermStatus, error) {
	conn, err := c.dialDaemon(ctx)
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(attachHandshake)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	req := Request{Method: "GET", Target: "/" + APIVersion + sessionPath(id, "/attach"),
		Header: textproto.MIMEHeader{"Connection": {"Upgrade"}, "Upgrade": {TermUpgrade}}}
	if opt.ReadOnly {
		req.Target += "?read_only=1"
	}
	if err := writeRequest(conn, req); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("attach to %s: %w", id, err)
	}
	br := bufio.NewReader(conn)
	resp, err := readHead(br)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("attach to %s: %w", id, err)
	}
	if resp.StatusCode != statusSwitching {
		defer conn.Close()
		b := &body{w: &wire{Conn: conn, br: br}, stop: func() bool { return true }}
		if err := frame(b, resp, br, req.Method); err != nil {
			return nil, nil, fmt.Errorf("attach to %s: %w", id, err)
		}
		if b.r == nil {
			b.r = bytes.NewReader(nil)
		}
		resp.Body = io.NopCloser(b.r)
		return nil, nil, errorFrom(resp)
	}
	var st TermStatus
	if err := json.Unmarshal([]byte(resp.Header.Get(TermStatusHeader)), &st); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("attach to %s: the daemon's answer has no terminal status: %w", id, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return &bufferedConn{Conn: conn, r: br}, &st, nil
}

// errorFrom turns an error response into an *Error.
func errorFrom(resp *Response) error {
	var eb ErrorBody
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err := json.Unmarshal(data, &eb); err != nil || eb.Code == "" {
		return &Error{Status: resp.StatusCode, Code: CodeInternal, Message: fmt.Sprintf("daemon answered %s: %s", resp.Status, bytes.TrimSpace(data))}
	}
	return &Error{Status: resp.StatusCode, Code: eb.Code, Message: eb.Error, Candidates: eb.Candidates}
}

// bufferedConn reads first what the response's reader took ahead of the
// stream.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
