package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io"
	"io/fs"
	"net"
	"net/textproto"
	"net/url"
	"path/filepath"
	"strconv"
	"time"
)

// Client talks to a daemon over its socket. The zero value is not usable
// until Socket is set; a Client is safe for concurrent use.
type Client struct {
	// Socket is the daemon's Unix socket path; with Dial set, what names
	// the daemon in errors (a host's URL).
	Socket string
	// Dial, when set, connects to the daemon instead of the socket (a
	// remote host through SSH, Remote.Dial).
	Dial func(ctx context.Context) (net.Conn, error)
	// OnWarning, if set, is called with the daemon's warning (the
	// Sessiond-Warning header) of each answer that carries one.
	OnWarning func(string)

	pool pool
}

// dial connects to the daemon: its socket, or through Dial.
func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	if c.Dial != nil {
		return c.Dial(ctx)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// DialUnix, not a Dialer's DialContext: a connect to a Unix socket
	// never waits (a full backlog is EAGAIN at once), so the context has
	// nothing to cut short, and the Dialer's resolution of the address
	// cost every command 30 µs of its start.
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: c.Socket, Net: "unix"})
}

// maxErrorBody bounds what the client reads of an error response.
const maxErrorBody = 1 << 20

// Close drops the client's idle connections.
func (c *Client) Close() { c.pool.closeIdle() }

// dialDaemon connects to the daemon; a failure is an *UnreachableError,
// or a 403 *Error when the socket is closed to this user.
func (c *Client) dialDaemon(ctx context.Context) (net.Conn, error) {
	conn, err := c.dial(ctx)
	if err == nil {
		return conn, nil
	}
	var un *UnreachableError
	if errors.As(err, &un) {
		return nil, un
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if errors.Is(err, fs.ErrPermission) {
		if dir := filepath.Dir(c.Socket); unix.Access(dir, unix.X_OK) != nil {
			return nil, &Error{Status: statusForbidden, Code: CodeForbidden,
				Message: fmt.Sprintf("permission denied on %s: its directory %s is closed to this user; whoever runs that sessiond must open it to its allowed_groups (chgrp GROUP %s; chmod 0750 %s)", c.Socket, dir, dir, dir)}
		}
		return nil, &Error{Status: statusForbidden, Code: CodeForbidden,
			Message: fmt.Sprintf("permission denied on %s: this user may not use that sessiond (ask for a group in its allowed_groups, or run your own)", c.Socket)}
	}
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	return nil, &UnreachableError{Socket: c.Socket, Err: err}
}

// send performs one request and returns the response for a 2xx status;
// any other status becomes an *Error, a failed dial an *UnreachableError.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body any) (*Response, error) {
	req := Request{Method: method, Target: "/" + APIVersion + path}
	if len(query) > 0 {
		req.Target += "?" + query.Encode()
	}
	if body != nil {
		b, ok := body.(encoded)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return nil, err
			}
		}
		req.Body = b
		req.Header = textproto.MIMEHeader{"Content-Type": {"application/json"}}
	}
	resp, err := c.roundTrip(ctx, req)
	if err != nil {
		return nil, err
	}
	if warn := resp.Header.Get(WarningHeader); warn != "" && c.OnWarning != nil {
		c.OnWarning(warn)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, errorFrom(resp)
}

// do sends a request and decodes the JSON answer into out (if not nil).
func do[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any) (T, error) {
	var out T
	resp, err := c.send(ctx, method, path, query, body)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == statusNoContent {
		return out, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("decode %s %s response: %w", method, path, err)
	}
	// What follows the value (a line end, the last chunk) is read, so the
	// connection serves the next request.
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)); err != nil {
		return out, fmt.Errorf("read %s %s response: %w", method, path, err)
	}
	return out, nil
}

func sessionPath(id string, rest string) string {
	return "/sessions/" + url.PathEscape(id) + rest
}

func listQuery(opt ListOptions) url.Values {
	q := url.Values{}
	if opt.All {
		q.Set("all", "1")
	}
	if opt.Chains {
		q.Set("chains", "1")
	}
	if opt.Stats {
		q.Set("stats", "1")
	}
	if opt.Project != "" {
		q.Set("project", opt.Project)
	}
	return q
}

// Sessions lists sessions.
func (c *Client) Sessions(ctx context.Context, opt ListOptions) ([]Session, error) {
	return do[[]Session](ctx, c, "GET", "/sessions", listQuery(opt), nil)
}

// SessionsJSON is Sessions as the daemon sends it, a JSON array, for a
// caller that passes the list on whole (ps --json) rather than reading it:
// decoding a thousand records to encode them again took most of the time.
func (c *Client) SessionsJSON(ctx context.Context, opt ListOptions) ([]byte, error) {
	return c.getSessions(ctx, listQuery(opt))
}

// readBody reads a whole answer: into a buffer of its Content-Length at
// once where it has one (io.ReadAll grows a slice from 512 bytes, copying
// a listing of 1000 sessions, some 300 KB, a dozen times).
func readBody(resp *Response) ([]byte, error) {
	n, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 || n > maxPresized {
		return io.ReadAll(resp.Body)
	}
	// One byte more, to see the end without a second buffer.
	buf := make([]byte, n+1)
	got, err := io.ReadFull(resp.Body, buf)
	switch err {
	case io.ErrUnexpectedEOF, io.EOF:
		return buf[:got], nil
	case nil:
		// More than it said: the rest as it comes.
		rest, err := io.ReadAll(resp.Body)
		return append(buf, rest...), err
	}
	return nil, err
}

// maxPresized bounds what readBody allocates on a Content-Length's word.
const maxPresized = 64 << 20

func (c *Client) getSessions(ctx context.Context, q url.Values) ([]byte, error) {
	return c.raw(ctx, "GET", "/sessions", q, nil)
}

// raw sends a request and returns its answer undecoded.
func (c *Client) raw(ctx context.Context, method, path string, query url.Values, body any) ([]byte, error) {
	resp, err := c.send(ctx, method, path, query, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := readBody(resp)
	if err != nil {
		return nil, fmt.Errorf("read %s %s response: %w", method, path, err)
	}
	return data, nil
}

// SessionRows lists sessions as table rows, for a listing that shows only
// those fields.
func (c *Client) SessionRows(ctx context.Context, opt ListOptions) ([]SessionRow, error) {
	q := listQuery(opt)
	q.Set("view", "row")
	data, err := c.getSessions(ctx, q)
	if err != nil {
		return nil, err
	}
	// data is this call's own: the rows may keep pieces of it.
	rows, err := decodeOwnedRows(data)
	if err != nil {
		return nil, fmt.Errorf("decode GET /sessions response: %w", err)
	}
	return rows, nil
}

// Restart stops a session if it runs and starts its spec again.
func (c *Client) Restart(ctx context.Context, id string, req RestartRequest) (*StartResponse, error) {
	return do[*StartResponse](ctx, c, "POST", sessionPath(id, "/restart"), nil, req)
}

// Remove removes an ended session's record, logs and handoff archive.
func (c *Client) Remove(ctx context.Context, id string) error {
	_, err := do[struct{}](ctx, c, "DELETE", sessionPath(id, ""), nil, nil)
	return err
}

// Prune removes ended sessions older than req.OlderThan.
func (c *Client) Prune(ctx context.Context, req PruneRequest) (*PruneResponse, error) {
	return do[*PruneResponse](ctx, c, "POST", "/sessions/prune", nil, req)
}

// encoded is a request's body already encoded as JSON, which send passes
// on as it is.
type encoded []byte

// Start starts a session.
func (c *Client) Start(ctx context.Context, req StartRequest) (*StartResponse, error) {
	body, err := startBody(&req)
	if err != nil {
		return nil, err
	}
	return do[*StartResponse](ctx, c, "POST", "/sessions", nil, body)
}

// StartJSON is Start's answer as the daemon sent it, undecoded.
func (c *Client) StartJSON(ctx context.Context, req StartRequest) ([]byte, error) {
	body, err := startBody(&req)
	if err != nil {
		return nil, err
	}
	return c.raw(ctx, "POST", "/sessions", nil, body)
}

// StartBrief is what a start's answer says to whoever started it: the
// session's id and state, where it waits or runs, the project's summary
// and what went wrong on the way. Decoding it alone spares a short
// command the decoding of a whole record.
type StartBrief struct {
	Session struct {
		ID       string      `json:"id"`
		State    string      `json:"state"`
		Queue    *QueuePlace `json:"queue,omitempty"`
		Worktree *Worktree   `json:"worktree,omitempty"`
	} `json:"session"`
	Summary string   `json:"summary,omitempty"`
	Notices []string `json:"notices,omitempty"`
}

// Session returns the record of the session id (or unique id prefix).
func (c *Client) Session(ctx context.Context, id string) (*Session, error) {
	return do[*Session](ctx, c, "GET", sessionPath(id, ""), nil, nil)
}

// SessionJSON is Session's answer as the daemon sent it, undecoded.
func (c *Client) SessionJSON(ctx context.Context, id string) ([]byte, error) {
	return c.raw(ctx, "GET", sessionPath(id, ""), nil, nil)
}

// SessionTimes is the part of a session record that says how long the
// session has left, or how it ended.
type SessionTimes struct {
	ID        string     `json:"id"`
	State     string     `json:"state"`
	Deadline  time.Time  `json:"deadline"`
	WarnAt    time.Time  `json:"warn_at"`
	EndedAt   *time.Time `json:"ended_at"`
	EndReason string     `json:"end_reason"`
	ExitCode  *int       `json:"exit_code"`
	Signal    string     `json:"signal"`
}

// SessionTimes is Session decoded into SessionTimes alone: a whole
// record's decoding (encoding/json learning its many types) is most of a
// short command's work.
func (c *Client) SessionTimes(ctx context.Context, id string) (*SessionTimes, error) {
	return do[*SessionTimes](ctx, c, "GET", sessionPath(id, ""), nil, nil)
}

// Stop stops a session and returns its final record, once its end is on disk.
func (c *Client) Stop(ctx context.Context, id string, req StopRequest) (*Session, error) {
	return do[*Session](ctx, c, "POST", sessionPath(id, "/stop"), nil, req)
}

// Signal sends a signal to a session's process group.
func (c *Client) Signal(ctx context.Context, id, signal string) error {
	_, err := do[struct{}](ctx, c, "POST", sessionPath(id, "/signal"), nil, SignalRequest{Signal: signal})
	return err
}

// Logs returns a session's output; with opt.Follow the stream goes on until
// the session ends or ctx is cancelled. The caller closes the stream.
func (c *Client) Logs(ctx context.Context, id string, opt LogOptions) (*LogStream, error) {
	q := url.Values{}
	if opt.Tail > 0 {
		q.Set("tail", strconv.Itoa(opt.Tail))
	}
	if opt.Follow {
		q.Set("follow", "1")
	}
	logTimeQuery(q, opt)
	if opt.Raw {
		q.Set("raw", "1")
	}
	resp, err := c.send(ctx, "GET", sessionPath(id, "/logs"), q, nil)
	if err != nil {
		return nil, err
	}
	return &LogStream{ReadCloser: resp.Body, Stamps: resp.Header.Get(LogStampsHeader)}, nil
}

// Version returns the daemon's version.
func (c *Client) Version(ctx context.Context) (Version, error) {
	return do[Version](ctx, c, "GET", "/version", nil, nil)
}

// Health returns the daemon's health.
func (c *Client) Health(ctx context.Context) (Health, error) {
	return do[Health](ctx, c, "GET", "/health", nil, nil)
}

// Events opens the event stream; with follow false it holds only the
// recent events the daemon keeps.
func (c *Client) Events(ctx context.Context, follow bool) (*EventWatcher, error) {
	q := url.Values{}
	if !follow {
		q.Set("follow", "0")
	}
	resp, err := c.send(ctx, "GET", "/events", q, nil)
	if err != nil {
		return nil, err
	}
	return &EventWatcher{body: resp.Body, dec: json.NewDecoder(bufio.NewReader(resp.Body))}, nil
}

// EventWatcher reads the event stream one event at a time.
type EventWatcher struct {
	body io.ReadCloser
	dec  *json.Decoder
}

// Next blocks until the next event, or returns an error when the stream ends.
func (w *EventWatcher) Next() (Event, error) {
	var ev Event
	err := w.dec.Decode(&ev)
	return ev, err
}

// Close ends the stream.
func (w *EventWatcher) Close() error { return w.body.Close() }

// Extend moves a session's deadline later by the duration by ("30m").
func (c *Client) Extend(ctx context.Context, id, by string) (*Session, error) {
	return do[*Session](ctx, c, "POST", sessionPath(id, "/extend"), nil, ExtendRequest{By: by})
}

// AgentExtend is Extend asked by the session's agent itself, which the
// spec's agent_may_extend caps.
func (c *Client) AgentExtend(ctx context.Context, id, by string) (*Session, error) {
	return do[*Session](ctx, c, "POST", sessionPath(id, "/extend"), nil, ExtendRequest{By: by, ByAgent: true})
}

// MaxHookPayload is the most of a hook's payload sessionctl sends: the
// adapters read what they need from its start.
const MaxHookPayload = 256 << 10

// Briefing is what session id started from: the previous handoff, the next
// task, the project's next actions, blockers and progress.
func (c *Client) Briefing(ctx context.Context, id string) (*Briefing, error) {
	return do[*Briefing](ctx, c, "GET", sessionPath(id, "/briefing"), nil, nil)
}

// AgentHook sends one payload of the session's agent's hooks.
func (c *Client) AgentHook(ctx context.Context, id string, req AgentHookRequest) (*AgentHookResponse, error) {
	return do[*AgentHookResponse](ctx, c, "POST", sessionPath(id, "/agent/hook"), nil, req)
}

// Report records what the agent reports from inside session id and
// returns the merged report.
func (c *Client) Report(ctx context.Context, id string, r Report) (*Report, error) {
	return do[*Report](ctx, c, "POST", sessionPath(id, "/report"), nil, r)
}

// Checkpoint takes a checkpoint of a live session's project now.
func (c *Client) Checkpoint(ctx context.Context, id string) (*CheckpointResult, error) {
	return do[*CheckpointResult](ctx, c, "POST", sessionPath(id, "/checkpoint"), nil, nil)
}

// Handoff returns a session's handoff.
func (c *Client) Handoff(ctx context.Context, id string) (*Handoff, error) {
	return do[*Handoff](ctx, c, "GET", sessionPath(id, "/handoff"), nil, nil)
}

func projectPath(dir, rest string) (string, url.Values) {
	return "/projects/" + ProjectID(dir) + rest, url.Values{"dir": {dir}}
}

// Projects lists the projects the daemon has run sessions in.
func (c *Client) Projects(ctx context.Context) ([]Project, error) {
	return do[[]Project](ctx, c, "GET", "/projects", nil, nil)
}

// ProjectSession returns a project's session state with its restore
// summary and what was noticed reading it.
func (c *Client) ProjectSession(ctx context.Context, dir string) (*ProjectSession, error) {
	p, q := projectPath(dir, "/session")
	q.Set("format", "full")
	return do[*ProjectSession](ctx, c, "GET", p, q, nil)
}

// ClearSessionState deletes a project's session state.
func (c *Client) ClearSessionState(ctx context.Context, dir string) error {
	p, q := projectPath(dir, "/session")
	_, err := do[struct{}](ctx, c, "DELETE", p, q, nil)
	return err
}

// ResolveBlockers resolves open blockers of the project in dir, from
// outside any session.
func (c *Client) ResolveBlockers(ctx context.Context, dir string, ids []string) (*ResolveResponse, error) {
	p, q := projectPath(dir, "/resolve")
	return do[*ResolveResponse](ctx, c, "POST", p, q, ResolveRequest{Dir: dir, Resolve: ids})
}

// Checkpoints lists a project's checkpoints; opt.Prune > 0 first prunes each
// session's checkpoints to that many.
func (c *Client) Checkpoints(ctx context.Context, dir string, opt CheckpointsOptions) ([]Checkpoint, error) {
	p, q := projectPath(dir, "/checkpoints")
	if opt.Prune > 0 {
		q.Set("prune", strconv.Itoa(opt.Prune))
	}
	if opt.Find != "" {
		q.Set("find", opt.Find)
	}
	return do[[]Checkpoint](ctx, c, "GET", p, q, nil)
}

// CheckpointStats says what a project's checkpoints hold on disk.
func (c *Client) CheckpointStats(ctx context.Context, dir string) (*CheckpointStats, error) {
	p, q := projectPath(dir, "/checkpoints/stats")
	return do[*CheckpointStats](ctx, c, "GET", p, q, nil)
}

// Restore restores a project's work tree to a checkpoint.
func (c *Client) Restore(ctx context.Context, dir, checkpoint string, force bool) (*RestoreResponse, error) {
	p, q := projectPath(dir, "/restore")
	return do[*RestoreResponse](ctx, c, "POST", p, q, RestoreRequest{Dir: dir, Checkpoint: checkpoint, Force: force})
}
