package ipc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
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
	return do[*TermScreen](ctx, c, http.MethodGet, sessionPath(id, "/screen"), q, nil)
}

// Send types text into a tty session's terminal.
func (c *Client) Send(ctx context.Context, id string, req SendRequest) error {
	_, err := do[struct{}](ctx, c, http.MethodPost, sessionPath(id, "/send"), nil, req)
	return err
}

// attachHandshake bounds the upgrade of an attach connection.
const attachHandshake = 10 * time.Second

// Attach connects to a tty session's terminal: the connection carries the
// terminal stream (package attach runs it on the user's terminal), and the
// status is the holder's. Refusals (no terminal, an ended session, a
// second writer) are *Error, as for every call.
func (c *Client) Attach(ctx context.Context, id string, opt AttachOptions) (net.Conn, *TermStatus, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		var un *UnreachableError
		if errors.As(err, &un) {
			return nil, nil, un
		}
		if errors.Is(err, fs.ErrPermission) {
			return nil, nil, &Error{Status: http.StatusForbidden, Code: CodeForbidden,
				Message: fmt.Sprintf("permission denied on %s: this user may not use that sessiond", c.Socket)}
		}
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		return nil, nil, &UnreachableError{Socket: c.Socket, Err: err}
	}
	deadline := time.Now().Add(attachHandshake)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	q := url.Values{}
	if opt.ReadOnly {
		q.Set("read_only", "1")
	}
	u := "http://sessiond/" + APIVersion + sessionPath(id, "/attach")
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", TermUpgrade)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("attach to %s: %w", id, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("attach to %s: read the daemon's answer: %w", id, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		defer resp.Body.Close()
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
func errorFrom(resp *http.Response) error {
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
