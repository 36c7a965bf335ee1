package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue "core supervisor": start, ps, logs, stop, the session's
// environment, the HTTP API, exit codes, persistence, bad input and
// permissions.

func TestStartPsLogsStop(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	run := script(t, dir, "run.sh", `echo line 1
echo line 2
echo line 3
while [ ! -e more ]; do sleep 0.02; done
echo streamed line
sleep 1000
`)
	before := time.Now()
	id := d.start(dir, "--timeout", "30s", "--warn-before", "10s", "--stop-grace", "1s", "--", run)

	// ps: the table's header and a row for the session.
	waitFor(t, 10*time.Second, "the first output in the log", func() (bool, string) {
		r := d.ctl("logs", id)
		return strings.Contains(r.stdout, "line 3"), r.String()
	})
	table := d.mustCtl("ps")
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	header := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(lines[0]), -1)
	wantHeader := []string{"ID", "NAME", "PROJECT", "COMMAND", "STATE", "PID", "CPU %", "MEM", "UPTIME", "REMAINING", "RESTARTS", "LAST ACTIVITY", "CHECKPOINTS"}
	if !slices.Equal(header, wantHeader) {
		t.Errorf("ps header: got %q, want %q", header, wantHeader)
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[1], id+" ") || !strings.Contains(lines[1], "running") {
		t.Errorf("ps: want one row for %s, running; got\n%s", id, table)
	}

	// ps --json: every field of the record, with sound values.
	out := d.mustCtl("ps", "--json")
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw) != 1 {
		t.Fatalf("ps --json: want one record, got %v\n%s", err, out)
	}
	for _, f := range recordFields {
		if _, ok := raw[0][f]; !ok {
			t.Errorf("ps --json: field %q missing", f)
		}
	}
	// Without filters the daemon's list is printed as it came, indented;
	// with them it is decoded first: the same text either way.
	if filtered := d.mustCtl("ps", "--json", "--filter", "state=running"); filtered != out {
		t.Errorf("ps --json printed\n%s\nps --json --filter state=running printed\n%s", out, filtered)
	}
	recs := d.list(false)
	rec := recs[0]
	sum := sha256.Sum256([]byte(dir))
	if rec.ID != id || rec.ProjectDir != dir || rec.ProjectID != hex.EncodeToString(sum[:])[:12] ||
		rec.Name != filepath.Base(dir) || !slices.Equal(rec.Command, []string{run}) || rec.State != "running" {
		t.Errorf("ps --json record: got id %s dir %s project_id %s name %s command %q state %s; want %s %s %s %s [%s] running",
			rec.ID, rec.ProjectDir, rec.ProjectID, rec.Name, rec.Command, rec.State, id, dir, hex.EncodeToString(sum[:])[:12], filepath.Base(dir), run)
	}
	if !alive(rec.PID) {
		t.Errorf("pid %d of the running session is not alive", rec.PID)
	}
	if rec.StartedAt.Before(before.Add(-time.Second)) || rec.StartedAt.After(time.Now()) {
		t.Errorf("started_at %s: want between %s and now", rec.StartedAt, before)
	}
	if got := rec.Deadline.Sub(rec.StartedAt); got != 30*time.Second {
		t.Errorf("deadline - started_at: got %s, want 30s", got)
	}
	if got := rec.Deadline.Sub(rec.WarnAt); got != 10*time.Second {
		t.Errorf("deadline - warn_at: got %s, want 10s", got)
	}
	if rec.EndedAt != nil || rec.EndReason != "" || rec.ExitCode != nil {
		t.Errorf("running session has an end: ended_at %v, end_reason %q, exit_code %v", rec.EndedAt, rec.EndReason, rec.ExitCode)
	}
	if !fileExists(rec.LogPath) {
		t.Errorf("log_path %s does not exist", rec.LogPath)
	}

	// logs and logs -n 2.
	if got, want := d.mustCtl("logs", id), "line 1\nline 2\nline 3\n"; got != want {
		t.Errorf("logs: got %q, want %q", got, want)
	}
	if got, want := d.mustCtl("logs", "-n", "2", id), "line 2\nline 3\n"; got != want {
		t.Errorf("logs -n 2: got %q, want %q", got, want)
	}

	// logs -f streams what comes after it started and returns at the end.
	var fout, ferr syncBuffer
	follow := exec.Command(sessionctlBin, "--socket", d.sock, "logs", "-f", id)
	follow.Env = cleanEnv()
	follow.Stdout, follow.Stderr = &fout, &ferr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	followDone := make(chan struct{})
	var followErr error
	go func() {
		followErr = follow.Wait()
		close(followDone)
	}()
	t.Cleanup(func() {
		_ = follow.Process.Kill()
		<-followDone
	})
	waitFor(t, 10*time.Second, "logs -f to print the existing output", func() (bool, string) {
		return strings.Contains(fout.String(), "line 3\n"), fout.String()
	})
	if err := os.WriteFile(filepath.Join(dir, "more"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "logs -f to stream the line written after it started", func() (bool, string) {
		return strings.Contains(fout.String(), "streamed line\n"), fout.String()
	})
	select {
	case <-followDone:
		t.Fatalf("logs -f returned while the session runs: %v", followErr)
	default:
	}

	// An id prefix addresses the session.
	if got := d.inspect(id[:3]).ID; got != id {
		t.Errorf("inspect %s (prefix): got id %s, want %s", id[:3], got, id)
	}

	// stop returns once the record and the handoff are on disk.
	stopOut := d.mustCtl("stop", id)
	onDisk, _ := d.readRecordFile(id)
	if onDisk.State != "ended" || onDisk.EndReason != "interrupted" || onDisk.EndedAt == nil {
		t.Errorf("session.json right after stop: state %s, end_reason %q, ended_at %v; want ended, interrupted, set",
			onDisk.State, onDisk.EndReason, onDisk.EndedAt)
	}
	handoff := filepath.Join(dir, ".sessiond", "handoff.json")
	if !strings.Contains(stopOut, handoff) {
		t.Errorf("stop output does not name the handoff %s:\n%s", handoff, stopOut)
	}
	if data, err := os.ReadFile(handoff); err != nil {
		t.Errorf("handoff right after stop: %v", err)
	} else {
		var h struct {
			SessionID string `json:"session_id"`
			EndReason string `json:"end_reason"`
		}
		if err := json.Unmarshal(data, &h); err != nil || h.SessionID != id || h.EndReason != "interrupted" {
			t.Errorf("handoff: got %+v (%v), want session %s, interrupted", h, err, id)
		}
	}
	if alive(rec.PID) {
		t.Errorf("session leader %d alive after stop returned", rec.PID)
	}

	select {
	case <-followDone:
		if followErr != nil {
			t.Errorf("logs -f: %v\n%s", followErr, ferr.String())
		}
	case <-time.After(10 * time.Second):
		t.Errorf("logs -f did not return within 10s of the session's end")
	}

	// ps no longer lists it; ps -a does, as ended.
	if got := d.list(false); len(got) != 0 {
		t.Errorf("ps after stop: got %d sessions, want none", len(got))
	}
	all := d.mustCtl("ps", "-a")
	if !strings.Contains(all, id) || !strings.Contains(all, "ended (interrupted)") {
		t.Errorf("ps -a after stop: want %s ended (interrupted), got\n%s", id, all)
	}
	if got := strings.Fields(d.mustCtl("ps", "-a", "-q")); !slices.Equal(got, []string{id}) {
		t.Errorf("ps -a -q: got %q, want [%s]", got, id)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestIDPrefixAmbiguous(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	// Start sessions until two ids share their first character; with a
	// 32-letter alphabet, 33 sessions always suffice.
	byFirst := map[byte]string{}
	var a, b string
	for i := 0; i < 33 && a == ""; i++ {
		id := d.start(project(t), "--", "true")
		if other, ok := byFirst[id[0]]; ok {
			a, b = other, id
		}
		byFirst[id[0]] = id
	}
	if a == "" {
		t.Fatalf("33 sessions without two ids sharing a first character: %v", byFirst)
	}
	r := d.ctl("inspect", a[:1])
	if r.code != 1 || !strings.Contains(r.stderr, "ambiguous") || !strings.Contains(r.stderr, a) || !strings.Contains(r.stderr, b) {
		t.Errorf("inspect of an ambiguous prefix: want exit 1 naming both %s and %s\n%s", a, b, r)
	}
	// The full ids, and a longer unique prefix, still work.
	for _, arg := range []string{a, b, b[:len(b)-1]} {
		if got := d.inspect(arg).ID; got != b && got != a {
			t.Errorf("inspect %s: got %s", arg, got)
		}
	}
}

func TestStopKillsEscapedProcesses(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	// The leader ignores SIGTERM and so does its child (SIG_IGN is
	// inherited); a grandchild escapes the group and the session with
	// setsid behind a double fork, and ignores SIGTERM too.
	run := script(t, dir, "run.sh", `trap "" TERM
echo $$ > leader.pid
(setsid bash -c 'trap "" TERM; echo $$ > grandchild.pid; exec sleep 1000' &)
sleep 1000 &
echo $! > child.pid
wait
`)
	id := d.start(dir, "--stop-grace", "20s", "--", run)
	pids := map[string]int{}
	for _, name := range []string{"leader", "child", "grandchild"} {
		pids[name] = readPID(t, filepath.Join(dir, name+".pid"))
	}
	killOnCleanup(t, pids["leader"], pids["child"], pids["grandchild"])
	for name, pid := range pids {
		if !alive(pid) {
			t.Fatalf("%s %d not alive before stop", name, pid)
		}
	}
	start := time.Now()
	out := d.mustCtl("stop", "--grace", "1s", id)
	took := time.Since(start)
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) survived stop --grace 1s", name, pid)
		}
	}
	rec := d.inspect(id)
	if rec.State != "ended" || rec.EndReason != "interrupted" || rec.Signal != "SIGKILL" {
		t.Errorf("after stop: state %s, end_reason %q, signal %q; want ended, interrupted, SIGKILL\n%s", rec.State, rec.EndReason, rec.Signal, out)
	}
	if took < 900*time.Millisecond || took > 6*time.Second {
		t.Errorf("stop --grace 1s of a SIGTERM-ignoring session took %s, want about 1s (the grace, not the spec's 20s)", took)
	}
}

// TestSessionOutputWithoutKeeper: with log_keeper = false the child's
// stdout and stderr are the log file itself.
func TestSessionOutputWithoutKeeper(t *testing.T) {
	t.Parallel()
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), "log_keeper = false\n[defaults]\ncheckpoint = \"\"\n")
	dir := project(t)
	run := script(t, dir, "run.sh", `readlink /proc/$$/fd/1 > stdout.txt
stat -L -c %F /proc/$$/fd/1 > stdout-type.txt
stat -L -c %F /proc/$$/fd/2 > stderr-type.txt
echo done
`)
	id := d.start(dir, "--", run)
	rec := d.waitEnded(id, 10*time.Second)
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	if got := read("stdout.txt"); got != rec.LogPath {
		t.Errorf("stdout: got %s, want the log %s", got, rec.LogPath)
	}
	for _, name := range []string{"stdout-type.txt", "stderr-type.txt"} {
		// "regular file", or "regular empty file" before the first write.
		if got := read(name); !strings.HasPrefix(got, "regular") {
			t.Errorf("%s: got %q, want a regular file (the log), not a pipe", name, got)
		}
	}
	if out := d.mustCtl("logs", id); out != "done\n" {
		t.Errorf("logs: %q", out)
	}
	if keeperPID(t, d.stateDir) != 0 {
		t.Error("a log keeper runs although log_keeper = false")
	}
}

func TestSessionEnvironment(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	run := script(t, dir, "run.sh", `env > env.txt
readlink /proc/$$/fd/0 > stdin.txt
readlink /proc/$$/fd/1 > stdout.txt
readlink /proc/$$/fd/2 > stderr.txt
stat -L -c %F /proc/$$/fd/1 > stdout-type.txt
stat -L -c %F /proc/$$/fd/2 > stderr-type.txt
echo done
`)
	id := d.start(dir, "--timeout", "1h", "--warn-before", "10m", "--env", "E2E_SECRET=s3cr3t-value-e2e", "--", run)
	rec := d.waitEnded(id, 10*time.Second)
	if rec.EndReason != "complete" {
		t.Fatalf("session ended %s, want complete", rec.EndReason)
	}
	env := readEnv(t, filepath.Join(dir, "env.txt"))
	pdir := filepath.Join(dir, ".sessiond")
	want := map[string]string{
		"SESSIOND_SESSION_ID":   id,
		"SESSIOND_PROJECT_DIR":  dir,
		"SESSIOND_SOCKET":       d.sock,
		"SESSIOND_CONTEXT_FILE": filepath.Join(pdir, "context.md"),
		"SESSIOND_STATE_FILE":   filepath.Join(pdir, "session_state.json"),
		"E2E_SECRET":            "s3cr3t-value-e2e",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s: got %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["SESSIOND_HANDOFF_FILE"]; ok {
		t.Errorf("SESSIOND_HANDOFF_FILE set for the project's first session: %q", env["SESSIOND_HANDOFF_FILE"])
	}
	for k, want := range map[string]time.Time{"SESSIOND_DEADLINE": rec.Deadline, "SESSIOND_WARN_AT": rec.WarnAt} {
		got, err := time.Parse(time.RFC3339, env[k])
		if err != nil {
			t.Errorf("%s = %q: not RFC 3339: %v", k, env[k], err)
			continue
		}
		if d := got.Sub(want); d < -time.Second || d > time.Second {
			t.Errorf("%s = %s, want the record's %s", k, got, want)
		}
	}
	if !fileExists(env["SESSIOND_CONTEXT_FILE"]) {
		t.Errorf("SESSIOND_CONTEXT_FILE %s does not exist", env["SESSIOND_CONTEXT_FILE"])
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	if got := read("stdin.txt"); got != "/dev/null" {
		t.Errorf("stdin: got %s, want /dev/null", got)
	}
	// Stdout and stderr are one pipe, into the log keeper (not the daemon).
	if got, stderr := read("stdout.txt"), read("stderr.txt"); !strings.HasPrefix(got, "pipe:") || got != stderr {
		t.Errorf("stdout %s, stderr %s: want one pipe, the log keeper's", got, stderr)
	}
	for _, name := range []string{"stdout-type.txt", "stderr-type.txt"} {
		if got := read(name); got != "fifo" {
			t.Errorf("%s: got %q, want the log keeper's pipe", name, got)
		}
	}
	if keeperPID(t, d.stateDir) == 0 {
		t.Error("no log keeper runs for the daemon")
	}
	// Env values are never written to the state files.
	for _, p := range []string{filepath.Join(d.stateDir, "sessions", id, "session.json"), filepath.Join(pdir, "handoff.json"), d.logPath} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("read %s: %v", p, err)
			continue
		}
		if bytes.Contains(data, []byte("s3cr3t-value-e2e")) {
			t.Errorf("%s holds the value of an --env variable", p)
		}
	}

	// The project's next session is handed the previous handoff.
	id2 := d.start(dir, "--", run)
	d.waitEnded(id2, 10*time.Second)
	env = readEnv(t, filepath.Join(dir, "env.txt"))
	if got, want := env["SESSIOND_HANDOFF_FILE"], filepath.Join(pdir, "handoff.json"); got != want {
		t.Errorf("second session: SESSIOND_HANDOFF_FILE = %q, want %q", got, want)
	}
	if env["SESSIOND_SESSION_ID"] != id2 {
		t.Errorf("second session: SESSIOND_SESSION_ID = %q, want %s", env["SESSIOND_SESSION_ID"], id2)
	}
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// curl makes one request with curl --unix-socket and parses the answer.
func curl(t *testing.T, sock, method, path string, body []byte) (*http.Response, []byte) {
	t.Helper()
	args := []string{"-s", "-i", "-H", "Expect:", "--max-time", "30", "--unix-socket", sock, "-X", method}
	if body != nil {
		f := filepath.Join(t.TempDir(), "body")
		if err := os.WriteFile(f, body, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-H", "Content-Type: application/json", "--data-binary", "@"+f)
	}
	args = append(args, "http://sessiond"+path)
	r := execute(t, os.Environ(), "curl", args...)
	if r.code != 0 {
		t.Fatalf("curl %s %s:\n%s", method, path, r)
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(r.stdout)), nil)
	if err != nil {
		t.Fatalf("curl %s %s: parse response: %v\n%s", method, path, err, r.stdout)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("curl %s %s: read body: %v", method, path, err)
	}
	return resp, data
}

func TestHTTPAPIWithCurl(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start(dir, "--", "sleep", "1000")

	resp, body := curl(t, d.sock, "GET", "/v1/sessions", nil)
	var list []record
	if resp.StatusCode != 200 || json.Unmarshal(body, &list) != nil || len(list) != 1 || list[0].ID != id {
		t.Errorf("GET /v1/sessions: got %d %s, want 200 and a list with %s", resp.StatusCode, body, id)
	}
	resp, body = curl(t, d.sock, "GET", "/v1/sessions/"+id, nil)
	var one record
	if resp.StatusCode != 200 || json.Unmarshal(body, &one) != nil || one.ID != id || one.State != "running" {
		t.Errorf("GET /v1/sessions/%s: got %d %s", id, resp.StatusCode, body)
	}
	resp, body = curl(t, d.sock, "GET", "/v1/health", nil)
	var health struct {
		Status string `json:"status"`
		Live   int    `json:"live"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &health) != nil || health.Status != "ok" || health.Live != 1 {
		t.Errorf("GET /v1/health: got %d %s, want 200, status ok, live 1", resp.StatusCode, body)
	}
	resp, body = curl(t, d.sock, "GET", "/v1/version", nil)
	var v struct {
		Version string `json:"version"`
		API     string `json:"api"`
		Socket  string `json:"socket"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil || v.API != "v1" || v.Socket != d.sock || v.Version == "" {
		t.Errorf("GET /v1/version: got %d %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Sessiond-Version"); got == "" || got != v.Version {
		t.Errorf("Sessiond-Version header: got %q, want %q", got, v.Version)
	}

	big := append([]byte(`{"dir":"`), bytes.Repeat([]byte("a"), 1<<20+10)...)
	big = append(big, `"}`...)
	fresh := project(t) // no session: its starts fail on their values alone
	for _, tc := range []struct {
		name, method, path string
		body               []byte
		status             int
		code, mention      string
	}{
		{"unknown id", "GET", "/v1/sessions/nosuchid", nil, 404, "not_found", "nosuchid"},
		{"stop unknown id", "POST", "/v1/sessions/nosuchid/stop", []byte(`{}`), 404, "not_found", "nosuchid"},
		{"malformed JSON", "POST", "/v1/sessions", []byte(`{"dir": `), 400, "bad_request", ""},
		{"body over 1 MiB", "POST", "/v1/sessions", big, 413, "too_large", ""},
		{"unknown route", "GET", "/v1/nope", nil, 404, "not_found", "/v1/nope"},
		{"unknown version", "GET", "/v2/sessions", nil, 404, "not_found", ""},
		{"unknown field", "POST", "/v1/sessions", []byte(`{"dir":"` + dir + `","bogus":1}`), 400, "bad_request", "bogus"},
		{"wrong type", "POST", "/v1/sessions", []byte(`{"dir":42}`), 400, "bad_request", `field "dir": want a string, got JSON number`},
		{"not an object", "POST", "/v1/sessions", []byte(`[1]`), 400, "bad_request", "the body: want a JSON object"},
		{"bad signal", "POST", "/v1/sessions/" + id + "/signal", []byte(`{"signal":"SIGFOO"}`), 400, "bad_request", "SIGFOO"},
		{"bad extend", "POST", "/v1/sessions/" + id + "/extend", []byte(`{"by":"soon"}`), 400, "bad_request", "soon"},
		{"bad tail", "GET", "/v1/sessions/" + id + "/logs?tail=-3", nil, 400, "bad_request", "tail"},
		{"negative max_tokens", "POST", "/v1/sessions", []byte(`{"dir":"` + fresh + `","command":["true"],"max_tokens":-5}`), 400, "bad_request", "max_tokens"},
		{"negative max_cost_usd", "POST", "/v1/sessions", []byte(`{"dir":"` + fresh + `","command":["true"],"max_cost_usd":-1}`), 400, "bad_request", "max_cost_usd"},
		{"uncatchable warn_signal", "POST", "/v1/sessions", []byte(`{"dir":"` + fresh + `","command":["true"],"warn_signal":"SIGKILL"}`), 400, "bad_request", "cannot be caught"},
		{"unknown agent", "POST", "/v1/sessions", []byte(`{"dir":"` + fresh + `","command":["true"],"agent":"gpt"}`), 400, "bad_request", "gpt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := curl(t, d.sock, tc.method, tc.path, tc.body)
			var e map[string]any
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%s %s: body is not JSON: %v\n%s", tc.method, tc.path, err, body)
			}
			msg, _ := e["error"].(string)
			if resp.StatusCode != tc.status || e["code"] != tc.code || msg == "" {
				t.Errorf("%s %s: got %d %s, want %d with code %q and an error message", tc.method, tc.path, resp.StatusCode, body, tc.status, tc.code)
			}
			if !strings.Contains(msg, tc.mention) {
				t.Errorf("%s %s: error %q does not mention %q", tc.method, tc.path, msg, tc.mention)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s %s: Content-Type %q, want application/json", tc.method, tc.path, ct)
			}
		})
	}
	// The refused starts left no record.
	for _, rec := range d.list(true) {
		if rec.ProjectDir == fresh {
			t.Errorf("a refused start left session %s (%s) in %s", rec.ID, rec.State, fresh)
		}
	}
	// None of that disturbed the daemon or the session.
	if got := d.inspect(id); got.State != "running" {
		t.Errorf("session after the bad requests: %s, want running", got.State)
	}
}

func TestClientExitCodes(t *testing.T) {
	t.Parallel()
	sock := newSocketPath(t) // nothing listens here
	for _, args := range [][]string{{"ps"}, {"version"}, {"inspect", "abc"}} {
		r := runCtl(t, sock, nil, args...)
		if r.code != 3 || !strings.Contains(r.stderr, sock) || !strings.Contains(r.stderr, "sessiond run") {
			t.Errorf("no daemon: want exit 3 naming %s and how to start the daemon (sessiond run)\n%s", sock, r)
		}
	}
	// The socket from the environment is the one named.
	r := execute(t, append(cleanEnv(), "SESSIOND_SOCKET="+sock), sessionctlBin, "ps")
	if r.code != 3 || !strings.Contains(r.stderr, sock) {
		t.Errorf("no daemon, SESSIOND_SOCKET: want exit 3 naming %s\n%s", sock, r)
	}
	// Usage errors are exit 2, before any attempt to reach the daemon.
	for _, args := range [][]string{
		{"stop", "--all", "abc"},
		{"ps", "--bogus"},
		{"logs", "abc", "def"},
		{"inspect"},
		{"extend", "abc"},
		{"extend", "abc", "soon"},
		{"logs", "-n", "x", "abc"},
		{"kill", "-s", "SIGFOO", "abc"},
		{"nosuchcommand"},
	} {
		r := runCtl(t, sock, nil, args...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("usage error: want exit 2 and a message\n%s", r)
		}
	}
}

func TestDaemonRestartKeepsRecords(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	sock := newSocketPath(t)
	d := startDaemonAt(t, stateDir, sock)
	doneDir, liveDir := project(t), project(t)
	done := d.start(doneDir, "--", "true")
	d.waitEnded(done, 10*time.Second)
	liveID := d.start(liveDir, "--stop-grace", "5s", "--", "sleep", "1000")
	livePID := d.inspect(liveID).PID
	before := rawRecords(t, d.mustCtl("ps", "-a", "--json"))

	// SIGTERM with a live session: it is stopped gracefully, its handoff
	// written, and the daemon exits 0.
	if code := d.stop(); code != 0 {
		t.Errorf("sessiond exit code after SIGTERM: got %d, want 0", code)
	}
	if alive(livePID) {
		t.Errorf("session pid %d alive after the daemon stopped", livePID)
	}
	if fileExists(sock) {
		t.Errorf("socket %s left behind after a clean shutdown", sock)
	}
	rec, _ := d.readRecordFile(liveID)
	if rec.State != "ended" || rec.EndReason != "interrupted" {
		t.Errorf("live session after daemon SIGTERM: state %s, end_reason %q; want ended, interrupted", rec.State, rec.EndReason)
	}
	var h struct {
		SessionID string `json:"session_id"`
		EndReason string `json:"end_reason"`
	}
	data, err := os.ReadFile(filepath.Join(liveDir, ".sessiond", "handoff.json"))
	if err != nil || json.Unmarshal(data, &h) != nil || h.SessionID != liveID || h.EndReason != "interrupted" {
		t.Errorf("handoff of the session stopped by the shutdown: %v %s", err, data)
	}

	// A new daemon on the same state dir knows both sessions, field for
	// field as before (the live one as it ended).
	d2 := startDaemonAt(t, stateDir, sock)
	after := rawRecords(t, d2.mustCtl("ps", "-a", "--json"))
	if len(after) != 2 {
		t.Fatalf("ps -a --json after restart: got %d sessions, want 2", len(after))
	}
	for _, f := range recordFields {
		if got, want := string(after[done][f]), string(before[done][f]); got != want {
			t.Errorf("ended session %s, field %s: after restart %s, before %s", done, f, got, want)
		}
	}
	var live record
	if err := json.Unmarshal(mustJSON(t, after[liveID]), &live); err != nil {
		t.Fatal(err)
	}
	if live.State != "ended" || live.EndReason != "interrupted" || live.EndedAt == nil {
		t.Errorf("stopped session after restart: state %s, end_reason %q", live.State, live.EndReason)
	}
}

func rawRecords(t *testing.T, out string) map[string]map[string]json.RawMessage {
	t.Helper()
	var list []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, out)
	}
	m := map[string]map[string]json.RawMessage{}
	for _, r := range list {
		var id string
		_ = json.Unmarshal(r["id"], &id)
		m[id] = r
	}
	return m
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ended := d.start(project(t), "--", "true")
	d.waitEnded(ended, 10*time.Second)
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		mention string
	}{
		{"unknown id", []string{"inspect", "nosuchid"}, 1, "nosuchid"},
		{"stop unknown id", []string{"stop", "nosuchid"}, 1, "nosuchid"},
		{"logs unknown id", []string{"logs", "nosuchid"}, 1, "nosuchid"},
		{"dir does not exist", []string{"start", filepath.Join(dir, "nope"), "--", "true"}, 1, "does not exist"},
		{"dir is a file", []string{"start", file, "--", "true"}, 1, "not a directory"},
		{"nothing after --", []string{"start", dir, "--"}, 2, "command"},
		{"no command, no sessiond.toml", []string{"start", dir}, 1, "sessiond.toml"},
		{"command not found", []string{"start", dir, "--", "no-such-command-e2e"}, 1, "no-such-command-e2e"},
		{"command not executable", []string{"start", dir, "--", "./afile"}, 1, "afile"},
		{"bad signal name", []string{"kill", "-s", "SIGFOO", ended}, 2, "SIGFOO"},
		{"kill an ended session", []string{"kill", ended}, 1, "ended"},
		{"bad --env", []string{"start", dir, "--env", "NOEQUALS", "--", "true"}, 2, "NOEQUALS"},
		// Flag values are checked before any request: usage errors.
		{"bad --restart", []string{"start", dir, "--restart", "sometimes", "--", "true"}, 2, "sometimes"},
		{"bad --stop-signal", []string{"start", dir, "--stop-signal", "SIGNOPE", "--", "true"}, 2, "SIGNOPE"},
		{"bad --timeout", []string{"start", dir, "--timeout", "abc", "--", "true"}, 2, "--timeout"},
		{"negative --stop-grace", []string{"start", dir, "--stop-grace", "-1s", "--", "true"}, 2, "--stop-grace"},
		{"negative stop --grace", []string{"stop", "--grace", "-1s", ended}, 2, "--grace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := d.with(t).ctl(tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.mention) {
				t.Errorf("want exit %d and a message mentioning %q\n%s", tc.code, tc.mention, r)
			}
			if strings.Count(strings.TrimSpace(r.stderr), "\n") > 3 {
				t.Errorf("want a short message, got\n%s", r.stderr)
			}
		})
	}
	// Nothing was started, and the daemon still answers.
	if got := d.list(true); len(got) != 1 {
		t.Errorf("ps -a after bad starts: got %d sessions, want only the one ended before", len(got))
	}
	if fileExists(filepath.Join(dir, ".sessiond", "session.lock")) {
		t.Errorf("a failed start left the project locked")
	}
	id := d.start(dir, "--", "sleep", "1000")
	if got := d.inspect(id).State; got != "running" {
		t.Errorf("a start after the bad ones: state %s, want running", got)
	}
}

func TestSocketPathTooLong(t *testing.T) {
	t.Parallel()
	dir := filepath.Dir(newSocketPath(t))
	// pathOf returns a socket path in dir exactly n bytes long.
	pathOf := func(n int) string {
		p := filepath.Join(dir, strings.Repeat("s", n-len(dir)-len("/.sock"))+".sock")
		if len(p) != n {
			t.Fatalf("built a path of %d bytes, want %d", len(p), n)
		}
		return p
	}
	for _, long := range []string{pathOf(108), filepath.Join(os.TempDir(), strings.Repeat("s", 110), "sessiond.sock")} {
		r := execute(t, cleanEnv(), sessiondBin, "run", "--config", emptyConfig(t),
			"--state-dir", filepath.Join(t.TempDir(), "state"), "--socket", long)
		if r.code == 0 || !strings.Contains(r.stderr, "107") || !strings.Contains(r.stderr, "--socket") {
			t.Errorf("socket path of %d bytes: want a non-zero exit naming the 107-byte limit and --socket\n%s", len(long), r)
		}
	}
	// 107 bytes is still fine.
	d := startDaemonAt(t, filepath.Join(t.TempDir(), "state"), pathOf(107))
	d.mustCtl("ps")
}

func TestSecondDaemonOnLiveSocket(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	id := d.start(project(t), "--", "sleep", "1000")
	r := execute(t, cleanEnv(), sessiondBin, "run", "--config", emptyConfig(t),
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--socket", d.sock)
	if r.code == 0 || !strings.Contains(r.stderr, d.sock) || !strings.Contains(r.stderr, "already") {
		t.Errorf("second daemon on a live socket: want a non-zero exit saying one already listens on %s\n%s", d.sock, r)
	}
	if got := d.inspect(id).State; got != "running" {
		t.Errorf("first daemon after the second gave up: session %s, want running", got)
	}
	if got := perm(t, d.sock); got != 0o600 {
		t.Errorf("socket mode after the second daemon gave up: %v", got)
	}
}

// TestSecondDaemonOnLiveStateDir: a second daemon given a live daemon's
// state dir (another socket: $XDG_RUNTIME_DIR differs between two shells)
// refuses to run, saying which daemon holds the dir, and leaves the first
// one's sessions, cgroups and log keeper alone.
func TestSecondDaemonOnLiveStateDir(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	id := d.start(project(t), "--", "sleep", "1000")
	other := newSocketPath(t)
	r := execute(t, cleanEnv(), sessiondBin, "run", "--config", emptyConfig(t),
		"--state-dir", d.stateDir, "--socket", other)
	pid := strconv.Itoa(d.cmd.Process.Pid)
	if r.code == 0 || !strings.Contains(r.stderr, "in use by another sessiond") || !strings.Contains(r.stderr, "pid "+pid) ||
		!strings.Contains(r.stderr, d.sock) || !strings.Contains(r.stderr, "--state-dir") {
		t.Errorf("second daemon on a live state dir: want a non-zero exit naming the first (pid %s, socket %s) and --state-dir\n%s", pid, d.sock, r)
	}
	if fileExists(other) {
		t.Errorf("the daemon that gave up left its socket %s", other)
	}
	if got := d.inspect(id).State; got != "running" {
		t.Errorf("first daemon after the second gave up: session %s, want running", got)
	}
	// Its cgroups and keeper are whole: the next start works, and the
	// first session's log still takes output.
	id2 := d.start(project(t), "--", "sh", "-c", "echo second-start; sleep 1000")
	waitFor(t, 10*time.Second, "the second session's output in its log", func() (bool, string) {
		out := d.mustCtl("logs", id2)
		return strings.Contains(out, "second-start"), out
	})
	if strings.Contains(readFile(t, d.logPath), "log keeper went away") {
		t.Errorf("the first daemon lost its log keeper to the second:\n%s", readFile(t, d.logPath))
	}
	// Once the first daemon is gone, the dir is free again.
	d.stop()
	d2 := startDaemonAt(t, d.stateDir, other)
	if got := d2.inspect(id).State; !strings.HasPrefix(got, "ended") {
		t.Errorf("the next daemon on the state dir: session %s, want ended", got)
	}
}

func TestStaleSocketIsReplaced(t *testing.T) {
	t.Parallel()
	t.Run("killed daemon", func(t *testing.T) {
		t.Parallel()
		stateDir := filepath.Join(t.TempDir(), "state")
		sock := newSocketPath(t)
		d := startDaemonAt(t, stateDir, sock)
		d.kill9()
		if !fileExists(sock) {
			t.Fatalf("kill -9 removed the socket file; nothing stale to test")
		}
		d2 := startDaemonAt(t, stateDir, sock)
		d2.mustCtl("ps")
	})
	t.Run("closed listener", func(t *testing.T) {
		t.Parallel()
		sock := newSocketPath(t)
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		if !fileExists(sock) {
			t.Fatalf("closing the listener removed the socket file")
		}
		d := startDaemonAt(t, filepath.Join(t.TempDir(), "state"), sock)
		d.start(project(t), "--", "true")
	})
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start(dir, "--", "true")
	d.waitEnded(id, 10*time.Second)
	sdir := filepath.Join(d.stateDir, "sessions", id)
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{
		{d.sock, 0o600},
		{d.stateDir, 0o700},
		{filepath.Join(d.stateDir, "sessions"), 0o700},
		{sdir, 0o700},
		{filepath.Join(sdir, "session.json"), 0o600},
		{filepath.Join(sdir, "output.log"), 0o600},
		{filepath.Join(sdir, "handoff.json"), 0o600},
		{filepath.Join(dir, ".sessiond"), 0o700},
		{filepath.Join(dir, ".sessiond", "handoff.json"), 0o600},
		{filepath.Join(dir, ".sessiond", "context.md"), 0o600},
	} {
		if got := perm(t, tc.path); got != tc.want {
			t.Errorf("%s: mode %v, want %v", tc.path, got, tc.want)
		}
	}
	fi, err := os.Lstat(d.sock)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("%s is not a socket: %v %v", d.sock, fi, err)
	}
}
