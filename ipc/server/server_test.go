package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// backend is a small Backend that answers from a fixed list, to test the
// adapter: routing, errors, bodies, streams.
type backend struct {
	sessions []ipc.Session
	events   chan ipc.Event
}

func (b *backend) ListSessions(ctx context.Context, c ipc.Caller, opt ipc.ListOptions) ([]ipc.Session, error) {
	return b.sessions, nil
}
func (b *backend) ListSessionRows(ctx context.Context, c ipc.Caller, opt ipc.ListOptions, dst []ipc.SessionRow) ([]ipc.SessionRow, error) {
	for i := range b.sessions {
		dst = append(dst, b.sessions[i].Row())
	}
	return dst, nil
}
func (b *backend) StartSession(ctx context.Context, c ipc.Caller, req ipc.StartRequest) (*ipc.StartResponse, error) {
	if len(req.Command) == 0 {
		return nil, ipc.BadRequest("no command")
	}
	return &ipc.StartResponse{Session: ipc.Session{ID: "new", Command: req.Command}}, nil
}
func (b *backend) GetSession(ctx context.Context, c ipc.Caller, id string) (*ipc.Session, error) {
	var found []string
	for _, s := range b.sessions {
		if strings.HasPrefix(s.ID, id) {
			found = append(found, s.ID)
		}
	}
	switch len(found) {
	case 0:
		return nil, ipc.NotFound("no session %q", id)
	case 1:
		return &b.sessions[0], nil
	}
	return nil, ipc.Ambiguous(id, found)
}
func (b *backend) StopSession(ctx context.Context, c ipc.Caller, id string, req ipc.StopRequest) (*ipc.Session, error) {
	return b.GetSession(ctx, c, id)
}
func (b *backend) SignalSession(ctx context.Context, c ipc.Caller, id string, req ipc.SignalRequest) error {
	return nil
}
func (b *backend) SessionLogs(ctx context.Context, c ipc.Caller, id string, opt ipc.LogOptions, w io.Writer) error {
	_, err := fmt.Fprintf(w, "tail=%d follow=%v\n", opt.Tail, opt.Follow)
	return err
}
func (b *backend) Subscribe(ctx context.Context, c ipc.Caller, opt ipc.EventOptions) (<-chan ipc.Event, error) {
	out := make(chan ipc.Event)
	go func() {
		defer close(out)
		for {
			select {
			case ev, ok := <-b.events:
				if !ok {
					return
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
func (b *backend) Version(context.Context) ipc.Version {
	return ipc.Version{Version: "test", API: ipc.APIVersion}
}
func (b *backend) Health(context.Context, ipc.Caller) ipc.Health { return ipc.Health{Status: "ok"} }
func (b *backend) Warning() string                               { return "" }
func (b *backend) ExtendSession(ctx context.Context, c ipc.Caller, id string, req ipc.ExtendRequest) (*ipc.Session, error) {
	if req.By == "" {
		return nil, ipc.BadRequest("by: empty")
	}
	return b.GetSession(ctx, c, id)
}
func (b *backend) ReportSession(ctx context.Context, c ipc.Caller, id string, rep ipc.Report) (*ipc.Report, error) {
	return &rep, nil
}
func (b *backend) CheckpointSession(ctx context.Context, c ipc.Caller, id string) (*ipc.CheckpointResult, error) {
	return &ipc.CheckpointResult{ID: "c0ffee", FilesChanged: 2}, nil
}
func (b *backend) SessionHandoff(ctx context.Context, c ipc.Caller, id string) (*ipc.Handoff, error) {
	return &ipc.Handoff{SessionID: id, EndReason: ipc.EndComplete}, nil
}
func (b *backend) RestartSession(ctx context.Context, c ipc.Caller, id string, req ipc.RestartRequest) (*ipc.StartResponse, error) {
	return &ipc.StartResponse{Session: ipc.Session{ID: "next", RestartOf: id}}, nil
}
func (b *backend) RemoveSession(ctx context.Context, c ipc.Caller, id string) error {
	_, err := b.GetSession(ctx, c, id)
	return err
}
func (b *backend) PruneSessions(ctx context.Context, c ipc.Caller, req ipc.PruneRequest) (*ipc.PruneResponse, error) {
	return &ipc.PruneResponse{Removed: []string{"old:" + req.OlderThan}}, nil
}
func (b *backend) ListProjects(ctx context.Context, c ipc.Caller) ([]ipc.Project, error) {
	return nil, nil
}
func (b *backend) ProjectSession(ctx context.Context, c ipc.Caller, p ipc.ProjectRef) (*ipc.ProjectSession, error) {
	if p.Dir == "" {
		return nil, ipc.NotFound("no project %q", p.ID)
	}
	return &ipc.ProjectSession{State: ipc.SessionState{NextActions: []string{"go on"}}, Summary: "summary of " + p.Dir}, nil
}
func (b *backend) ClearProjectSession(ctx context.Context, c ipc.Caller, p ipc.ProjectRef) error {
	return nil
}
func (b *backend) ResolveBlockers(ctx context.Context, c ipc.Caller, p ipc.ProjectRef, req ipc.ResolveRequest) (*ipc.ResolveResponse, error) {
	return &ipc.ResolveResponse{Resolved: []ipc.Blocker{}, Open: []ipc.Blocker{}, Sessions: []string{}}, nil
}
func (b *backend) ProjectCheckpoints(ctx context.Context, c ipc.Caller, p ipc.ProjectRef, opt ipc.CheckpointsOptions) ([]ipc.Checkpoint, error) {
	return []ipc.Checkpoint{{ID: "c1", SessionID: fmt.Sprint(opt.Prune)}}, nil
}
func (b *backend) RestoreProject(ctx context.Context, c ipc.Caller, p ipc.ProjectRef, req ipc.RestoreRequest) (*ipc.RestoreResponse, error) {
	return &ipc.RestoreResponse{Saved: ipc.CheckpointResult{ID: "saved"}, Restored: ipc.Checkpoint{ID: req.Checkpoint}}, nil
}

func (b *backend) AgentHook(ctx context.Context, c ipc.Caller, id string, req ipc.AgentHookRequest) (*ipc.AgentHookResponse, error) {
	return &ipc.AgentHookResponse{Event: "SessionStart"}, nil
}

func (b *backend) SessionBriefing(ctx context.Context, c ipc.Caller, id string) (*ipc.Briefing, error) {
	return &ipc.Briefing{}, nil
}

func (b *backend) StartSessions(ctx context.Context, c ipc.Caller, reqs []ipc.StartRequest) ([]ipc.StartResult, error) {
	out := make([]ipc.StartResult, len(reqs))
	for i, r := range reqs {
		if len(r.Command) == 0 {
			out[i].Error = ipc.ErrorBodyOf(ipc.BadRequest("no command"))
			continue
		}
		out[i].StartResponse = &ipc.StartResponse{Session: ipc.Session{ID: fmt.Sprintf("new%d", i)}}
	}
	return out, nil
}

func (b *backend) StopSessions(ctx context.Context, c ipc.Caller, req ipc.StopBatchRequest) ([]ipc.StopResult, error) {
	out := []ipc.StopResult{}
	for _, id := range req.IDs {
		out = append(out, ipc.StopResult{ID: id, Session: &ipc.Session{ID: id, State: ipc.StateEnded}})
	}
	return out, nil
}

func (b *backend) CheckpointStats(ctx context.Context, c ipc.Caller, p ipc.ProjectRef) (*ipc.CheckpointStats, error) {
	return &ipc.CheckpointStats{Checkpoints: 1}, nil
}

// fake is every service the server serves, as one fake (backend).
type fake interface {
	ipc.Sessions
	ipc.Logs
	ipc.Terminals
	ipc.Projects
	ipc.Events
	ipc.System
	ipc.Notifications
	ipc.Worktrees
}

// services wires b as each of the server's services.
func services(b fake) ipc.Services {
	return ipc.Services{Sessions: b, Logs: b, Terminals: b, Projects: b, Events: b, System: b, Notifications: b, Worktrees: b}
}

// serve starts a server on a socket in a temp dir and returns a client.
func serve(t *testing.T, b fake, access AccessFunc) (*ipc.Client, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ipc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	l, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if access == nil {
		access = func(ipc.Caller) bool { return true }
	}
	srv := New(services(b), access, zap.NewNop())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	c := &ipc.Client{Socket: sock}
	t.Cleanup(func() { c.Close() })
	return c, sock
}

func TestClientErrors(t *testing.T) {
	b := &backend{sessions: []ipc.Session{{ID: "abc1"}, {ID: "abc2"}}}
	c, _ := serve(t, b, nil)
	ctx := context.Background()

	_, err := c.Session(ctx, "zz")
	if !errors.Is(err, ipc.ErrNotFound) {
		t.Errorf("unknown id: err = %v, want ipc.ErrNotFound", err)
	}
	_, err = c.Session(ctx, "abc")
	var e *ipc.Error
	if !errors.As(err, &e) || e.Code != ipc.CodeAmbiguous || len(e.Candidates) != 2 {
		t.Errorf("ambiguous prefix: err = %#v, want code ambiguous with 2 candidates", err)
	}
	if _, err := c.Start(ctx, ipc.StartRequest{Dir: "/"}); !errors.Is(err, ipc.ErrBadRequest) {
		t.Errorf("start without command: err = %v, want ipc.ErrBadRequest", err)
	}
	resp, err := c.Start(ctx, ipc.StartRequest{Dir: "/", Command: []string{"x"}})
	if err != nil || resp.Session.ID != "new" {
		t.Errorf("start = %v, %v", resp, err)
	}
	rows, err := c.SessionRows(ctx, ipc.ListOptions{})
	if err != nil || len(rows) != 2 || rows[1].ID != "abc2" {
		t.Errorf("rows = %+v, %v", rows, err)
	}
}

func TestUnreachable(t *testing.T) {
	c := &ipc.Client{Socket: filepath.Join(t.TempDir(), "none.sock")}
	_, err := c.Version(context.Background())
	var ue *ipc.UnreachableError
	if !errors.As(err, &ue) || ue.Socket != c.Socket {
		t.Fatalf("err = %v, want *ipc.UnreachableError naming the socket", err)
	}
}

func rawRequest(t *testing.T, sock, method, path, body string) (*http.Response, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequest(method, "http://sessiond"+path, strings.NewReader(body))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestBadRequests(t *testing.T) {
	_, sock := serve(t, &backend{}, nil)
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
		says                     string
	}{
		{"malformed json", "POST", "/v1/sessions", "{bad", 400, ipc.CodeBadRequest, ""},
		{"unknown field", "POST", "/v1/sessions", `{"dir":"/","bogus":1}`, 400, ipc.CodeBadRequest, ""},
		{"wrong type", "POST", "/v1/sessions", `{"dir":3}`, 400, ipc.CodeBadRequest, ""},
		{"trailing data", "POST", "/v1/sessions", `{"dir":"/"} {}`, 400, ipc.CodeBadRequest, ""},
		{"too large", "POST", "/v1/sessions", `{"dir":"` + strings.Repeat("x", MaxBodySize) + `"}`, 413, ipc.CodeTooLarge, ""},
		{"unknown route", "GET", "/v1/nope", "", 404, ipc.CodeNotFound, "the API is under /v1"},
		{"no version", "GET", "/sessions", "", 404, ipc.CodeNotFound, "the API is under /v1"},
		{"wrong method", "DELETE", "/v1/version", "", 404, ipc.CodeNotFound, "(it takes GET)"},
		{"wrong method on a path of two", "PUT", "/v1/sessions", "", 404, ipc.CodeNotFound, "(it takes GET, POST)"},
		{"wrong method on a pattern", "PUT", "/v1/sessions/abc/stop", "", 404, ipc.CodeNotFound, "(it takes POST)"},
		{"bad tail", "GET", "/v1/sessions/x/logs?tail=-1", "", 400, ipc.CodeBadRequest, ""},
		{"bad all", "GET", "/v1/sessions?all=maybe", "", 400, ipc.CodeBadRequest, ""},
		{"bad view", "GET", "/v1/sessions?view=wide", "", 400, ipc.CodeBadRequest, ""},
		{"bad prune", "GET", "/v1/projects/abc/checkpoints?prune=x", "", 400, ipc.CodeBadRequest, ""},
		{"bad format", "GET", "/v1/projects/abc/session?dir=/p&format=xml", "", 400, ipc.CodeBadRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := rawRequest(t, sock, tt.method, tt.path, tt.body)
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tt.status, body)
			}
			var eb ipc.ErrorBody
			if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error == "" {
				t.Errorf("body = %s, want {\"error\", \"code\"}", body)
			}
			if tt.code != "" && eb.Code != tt.code {
				t.Errorf("body = %s, want code %s", body, tt.code)
			}
			if !strings.Contains(eb.Error, tt.says) {
				t.Errorf("body = %s, want it to say %q", body, tt.says)
			}
			if got := resp.Header.Get(ipc.VersionHeader); got != "test" {
				t.Errorf("%s header = %q, want test", ipc.VersionHeader, got)
			}
		})
	}
}

func TestEventsStream(t *testing.T) {
	b := &backend{events: make(chan ipc.Event)}
	c, _ := serve(t, b, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := c.Events(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 3 {
		b.events <- ipc.Event{Type: ipc.EventStarted, SessionID: fmt.Sprint(i)}
		ev, err := w.Next()
		if err != nil || ev.SessionID != fmt.Sprint(i) {
			t.Fatalf("event %d = %+v, %v", i, ev, err)
		}
	}
	close(b.events)
	if _, err := w.Next(); err == nil {
		t.Error("stream did not end when the backend closed it")
	}
}

func TestLogsParams(t *testing.T) {
	c, _ := serve(t, &backend{sessions: []ipc.Session{{ID: "s1"}}}, nil)
	rc, err := c.Logs(context.Background(), "s1", ipc.LogOptions{Tail: 5, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if got, want := string(b), "tail=5 follow=true\n"; got != want {
		t.Errorf("logs = %q, want %q", got, want)
	}
	if _, err := c.Logs(context.Background(), "nope", ipc.LogOptions{}); !errors.Is(err, ipc.ErrNotFound) {
		t.Errorf("logs of unknown session: %v, want ipc.ErrNotFound", err)
	}
}

// TestTypedRoutes goes through every route whose answer is typed, so that
// the table, the adapters and the client agree on paths and shapes.
func TestTypedRoutes(t *testing.T) {
	c, _ := serve(t, &backend{sessions: []ipc.Session{{ID: "s1"}}}, nil)
	ctx := context.Background()
	if _, err := c.Extend(ctx, "s1", ""); !errors.Is(err, ipc.ErrBadRequest) {
		t.Errorf("extend with no duration: %v, want ErrBadRequest", err)
	}
	if rec, err := c.Extend(ctx, "s1", "1h"); err != nil || rec.ID != "s1" {
		t.Errorf("extend = %+v, %v", rec, err)
	}
	if rep, err := c.Report(ctx, "s1", ipc.Report{Summary: "did it"}); err != nil || rep.Summary != "did it" {
		t.Errorf("report = %+v, %v", rep, err)
	}
	if res, err := c.Checkpoint(ctx, "s1"); err != nil || res.ID != "c0ffee" || res.FilesChanged != 2 {
		t.Errorf("checkpoint = %+v, %v", res, err)
	}
	if h, err := c.Handoff(ctx, "s1"); err != nil || h.SessionID != "s1" || h.EndReason != ipc.EndComplete {
		t.Errorf("handoff = %+v, %v", h, err)
	}
	if ps, err := c.ProjectSession(ctx, "/p"); err != nil || ps.Summary != "summary of /p" || ps.State.NextActions[0] != "go on" {
		t.Errorf("project session = %+v, %v", ps, err)
	}
	if list, err := c.Checkpoints(ctx, "/p", ipc.CheckpointsOptions{Prune: 3}); err != nil || len(list) != 1 || list[0].SessionID != "3" {
		t.Errorf("checkpoints = %+v, %v", list, err)
	}
	if r, err := c.Restore(ctx, "/p", "abc", false); err != nil || r.Saved.ID != "saved" || r.Restored.ID != "abc" {
		t.Errorf("restore = %+v, %v", r, err)
	}
	if err := c.ClearSessionState(ctx, "/p"); err != nil {
		t.Errorf("clear: %v", err)
	}
	if r, err := c.Restart(ctx, "s1", ipc.RestartRequest{}); err != nil || r.Session.RestartOf != "s1" {
		t.Errorf("restart = %+v, %v", r, err)
	}
	if err := c.Remove(ctx, "s1"); err != nil {
		t.Errorf("remove: %v", err)
	}
	if err := c.Remove(ctx, "zz"); !errors.Is(err, ipc.ErrNotFound) {
		t.Errorf("remove of an unknown session: %v, want not found", err)
	}
	if r, err := c.Prune(ctx, ipc.PruneRequest{OlderThan: "24h"}); err != nil || len(r.Removed) != 1 || r.Removed[0] != "old:24h" {
		t.Errorf("prune = %+v, %v", r, err)
	}
	if list, err := c.Projects(ctx); err != nil || list == nil {
		t.Errorf("projects = %v, %v; want an empty list", list, err)
	}
}

func TestAccessRefused(t *testing.T) {
	c, _ := serve(t, &backend{}, func(ipc.Caller) bool { return false })
	_, err := c.Version(context.Background())
	if !errors.Is(err, ipc.ErrForbidden) {
		t.Fatalf("err = %v, want ipc.ErrForbidden", err)
	}
}

// TestPeerCredentials connects as another user and checks that the server
// sees that user's uid; needs root to switch users.
func TestPeerCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	seen := make(chan ipc.Caller, 1)
	_, sock := serve(t, &backend{}, func(c ipc.Caller) bool {
		select {
		case seen <- c:
		default:
		}
		return c.UID == 0
	})
	// Let the other user reach the socket, so that only the peer check
	// stands in its way.
	if err := os.Chmod(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", sock, "http://sessiond/v1/version")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl as nobody: %v", err)
	}
	if string(out) != "403" {
		t.Errorf("status for uid 65534 = %s, want 403", out)
	}
	c := <-seen
	if c.UID != 65534 || c.PID == 0 {
		t.Errorf("caller = %+v, want uid 65534 and a pid", c)
	}
}

func TestListen(t *testing.T) {
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
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := Listen(sock, 0o600); !errors.Is(err, ErrDaemonRunning) {
		t.Errorf("second Listen: err = %v, want ErrDaemonRunning", err)
	}
	l.Close()

	// A stale socket file (its listener gone without unlinking) is replaced.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	l2, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l2.Close()

	// A regular file is not removed.
	if err := os.WriteFile(sock, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(sock, 0o600); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen over a file: err = %v", err)
	}
	long := "/tmp/" + strings.Repeat("x", ipc.MaxSocketPath)
	if _, err := Listen(long, 0o600); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("Listen on a long path: err = %v", err)
	}
}

// FuzzDecodeBodies feeds every request body type the API decodes: the
// decoder must answer an API error or succeed, never panic.
func FuzzDecodeBodies(f *testing.F) {
	f.Add([]byte(`{"dir":"/tmp","command":["a"],"env":{"K":"V"},"checkpoint":""}`))
	f.Add([]byte(`{"summary":"s","next":["a"],"progress":50.5,"step":"2/5"}`))
	f.Add([]byte(`{"grace":"10s"}`))
	f.Add([]byte(`{"signal":"SIGTERM"}`))
	f.Add([]byte(`{"by":"1h"}`))
	f.Add([]byte(`{"checkpoint":"abc","force":true}`))
	f.Add([]byte(`{"dir":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range []any{&ipc.StartRequest{}, &ipc.Report{}, &ipc.StopRequest{}, &ipc.SignalRequest{}, &ipc.ExtendRequest{}, &ipc.RestoreRequest{}} {
			r, _ := http.NewRequest("POST", "/", strings.NewReader(string(data)))
			if err := decodeBody(r, v); err != nil {
				var e *ipc.Error
				if !errors.As(err, &e) || e.Status == 0 {
					t.Fatalf("decode %T: error %v is not an API error", v, err)
				}
			}
		}
	})
}

// TestBatches: POST /v1/sessions takes one request or an array of them,
// each answered in order, a failed one with its error; POST
// /v1/sessions/stop stops several.
func TestBatches(t *testing.T) {
	b := &backend{}
	c, sock := serve(t, b, nil)
	ctx := context.Background()
	res, err := c.StartBatch(ctx, []ipc.StartRequest{{Dir: "/", Command: []string{"x"}}, {Dir: "/"}, {Dir: "/", Command: []string{"y"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].StartResponse == nil || res[0].Session.ID != "new0" || res[1].Error == nil || res[1].Error.Code != ipc.CodeBadRequest || res[2].Session.ID != "new2" {
		t.Errorf("batch start = %+v", res)
	}
	one, err := c.Start(ctx, ipc.StartRequest{Dir: "/", Command: []string{"x"}})
	if err != nil || one.Session.ID != "new" {
		t.Errorf("single start after batches: %+v, %v", one, err)
	}
	stops, err := c.StopBatch(ctx, ipc.StopBatchRequest{IDs: []string{"a", "b"}})
	if err != nil || len(stops) != 2 || stops[1].Session.State != ipc.StateEnded {
		t.Errorf("batch stop = %+v, %v", stops, err)
	}
	for _, body := range []string{`[{"dir": "/", "nope": 1}]`, `[1, 2]`, `[`} {
		resp, err := rawPost(sock, "/v1/sessions", body)
		if err != nil {
			t.Fatal(err)
		}
		if resp != http.StatusBadRequest {
			t.Errorf("batch %s: status %d, want 400", body, resp)
		}
	}
}

func rawPost(sock, path, body string) (int, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := hc.Post("http://sessiond"+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestRoutesAreTheTable: the server registers every route of ipc.Routes
// and no other, and serves the OpenAPI document made of them.
func TestRoutesAreTheTable(t *testing.T) {
	s := New(services(&backend{}), nil, zap.NewNop())
	for _, r := range ipc.Routes {
		if !s.routes[r.Pattern()] {
			t.Errorf("%s is in ipc.Routes but not served", r.Pattern())
		}
	}
	for p := range s.routes {
		if !strings.HasPrefix(p, "GET /debug/") && !documented[p] {
			t.Errorf("%s is served but not in ipc.Routes", p)
		}
	}
	rec := httptest.NewRecorder()
	if err := s.openAPI(rec, httptest.NewRequest("GET", "/v1/openapi.json", nil), ipc.Caller{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" || len(doc.Paths) < 30 {
		t.Errorf("GET /v1/openapi.json: %v %q, %d paths", err, doc.OpenAPI, len(doc.Paths))
	}
}

// writeCounter counts the writes of an answer's body.
type writeCounter struct {
	*httptest.ResponseRecorder
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.ResponseRecorder.Write(p)
}

// TestWriteEncodedInOneWrite: an answer whose buffer has room for the
// newline goes out in one write (the newline on its own was a write of
// its own, and one more wake-up of the client); one without room is not
// copied to make it, and both say the same.
func TestWriteEncodedInOneWrite(t *testing.T) {
	for _, tt := range []struct {
		room   int
		writes int
	}{{1, 1}, {100, 1}, {0, 2}} {
		body := `[{"id":"a"}]`
		b := append(make([]byte, 0, len(body)+tt.room), body...)
		w := &writeCounter{ResponseRecorder: httptest.NewRecorder()}
		writeEncoded(w, http.StatusOK, b)
		if w.writes != tt.writes {
			t.Errorf("room %d: %d writes, want %d", tt.room, w.writes, tt.writes)
		}
		if got := w.Body.String(); got != body+"\n" || w.Header().Get("Content-Length") != strconv.Itoa(len(body)+1) {
			t.Errorf("room %d: body %q, length %s", tt.room, got, w.Header().Get("Content-Length"))
		}
	}
}

// TestListingRowsFromKeptBuffers: listings answered from the kept rows and
// buffers say each what its own listing holds, an empty one [] (not
// null), however the one before it was.
func TestListingRowsFromKeptBuffers(t *testing.T) {
	b := &backend{}
	c, _ := serve(t, b, nil)
	ctx := context.Background()
	rowView := func() string {
		t.Helper()
		resp, err := c.Raw(ctx, ipc.Request{Method: "GET", Target: "/v1/sessions?view=row"})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	// First, while no listing has left its rows to the next.
	if got := rowView(); got != "[]\n" {
		t.Errorf("empty row view: %q, want []", got)
	}
	t0 := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 3, 1, 0, 5, 2} {
		b.sessions = nil
		for i := range n {
			b.sessions = append(b.sessions, ipc.Session{ID: fmt.Sprintf("s%d-%d", n, i), Command: []string{"sleep"}, State: ipc.StateRunning, StartedAt: t0})
		}
		raw, err := c.SessionsJSON(ctx, ipc.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := c.SessionRows(ctx, ipc.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != n {
			t.Fatalf("%d sessions: %d rows", n, len(rows))
		}
		for i, r := range rows {
			if r.ID != b.sessions[i].ID {
				t.Errorf("%d sessions: row %d is %s, want %s", n, i, r.ID, b.sessions[i].ID)
			}
		}
		if n == 0 && (strings.TrimSpace(string(raw)) != "[]" || rowView() != "[]\n") {
			t.Errorf("no session: %q, want []", raw)
		}
	}
}
