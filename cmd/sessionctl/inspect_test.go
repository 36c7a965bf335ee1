package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// inspect prints the daemon's record as it came (passJSON), not decoded
// and encoded again (printJSON): the two must print the same, the daemon
// encoding with json.Marshal (ipc/server.writeJSON).
func TestInspectPrintsTheRecordAsDecodingWould(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 123456789, time.UTC)
	ended, code := now.Add(time.Hour), 3
	rec := ipc.Session{
		ID: "a1b2c3d4", Name: "shop", ProjectDir: "/src/shop <&> é", ProjectID: "0123456789ab",
		Command: []string{"sh", "-c", "make test && echo '<done>' \x1b[31m\u2028"}, State: ipc.StateEnded, PID: 4242,
		StartedAt: now, EndedAt: &ended, Deadline: now.Add(4 * time.Hour), WarnAt: now.Add(3 * time.Hour),
		EndReason: "exited", ExitCode: &code, FilesChanged: []string{"a.go", "b/c.go"}, Checkpoints: 2, Seq: 7,
		EnvKeys: []string{"PATH"}, Warnings: []string{"w"},
	}
	wire, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	wire = append(wire, '\n')
	var passed, printed bytes.Buffer
	if err := (&app{out: &passed}).passJSON(wire, nil); err != nil {
		t.Fatal(err)
	}
	if err := (&app{out: &printed}).printJSON(&rec); err != nil {
		t.Fatal(err)
	}
	if passed.String() != printed.String() {
		t.Errorf("inspect's output differs from the decoded record's:\n%s\nwant\n%s", passed.String(), printed.String())
	}
}

// start --json prints the daemon's answer as it came; the rest of start
// reads the answer's brief (ipc.StartBrief), which must say what the whole
// answer says.
func TestStartReadsItsAnswerAsDecodingWould(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	resp := ipc.StartResponse{
		Session: ipc.Session{ID: "a1b2c3d4", Name: "shop <1>", State: ipc.StateQueued, StartedAt: now,
			Queue:    &ipc.QueuePlace{Pool: "gpu", Place: 2, Reason: ipc.QueuedForPool, Since: now},
			Worktree: &ipc.Worktree{Name: "w", Branch: "sessiond/w", Path: "/w", Repo: "/r"}},
		Summary: "Resuming: 3/5 tasks done",
		Notices: []string{"state file kept aside"},
	}
	wire, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var passed, printed bytes.Buffer
	if err := (&app{out: &passed}).passJSON(wire, nil); err != nil {
		t.Fatal(err)
	}
	if err := (&app{out: &printed}).printJSON(&resp); err != nil {
		t.Fatal(err)
	}
	if passed.String() != printed.String() {
		t.Errorf("start --json differs from the decoded answer:\n%s\nwant\n%s", passed.String(), printed.String())
	}
	var brief ipc.StartBrief
	if err := json.Unmarshal(wire, &brief); err != nil {
		t.Fatal(err)
	}
	s := brief.Session
	if s.ID != resp.Session.ID || s.State != resp.Session.State || *s.Queue != *resp.Session.Queue || *s.Worktree != *resp.Session.Worktree ||
		brief.Summary != resp.Summary || len(brief.Notices) != 1 || brief.Notices[0] != resp.Notices[0] {
		t.Errorf("the brief %+v says other than the answer %+v", brief, resp)
	}
}
