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
