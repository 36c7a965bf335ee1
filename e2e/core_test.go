package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
	wantHeader := []string{"ID", "PROJECT", "COMMAND", "STATE", "PID", "UPTIME", "REMAINING", "RESTARTS", "LAST ACTIVITY", "CHECKPOINTS"}
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
	followDone := make(chan error, 1)
	go func() { followDone <- follow.Wait() }()
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
	case err := <-followDone:
		t.Fatalf("logs -f returned while the session runs: %v", err)
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
	case err := <-followDone:
		if err != nil {
			t.Errorf("logs -f: %v\n%s", err, ferr.String())
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
