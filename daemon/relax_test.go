package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/sessiond/sessiond/daemon/memory"
	"github.com/sessiond/sessiond/ipc"
)

// startMany starts n sessions that wait to be stopped, in one call.
func startMany(h *harness, n int) {
	h.t.Helper()
	root := h.t.TempDir()
	reqs := make([]ipc.StartRequest, n)
	for i := range reqs {
		dir := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			h.t.Fatal(err)
		}
		reqs[i] = ipc.StartRequest{Dir: dir, Command: []string{"sleep", "1000"}}
	}
	out, err := h.client.StartBatch(context.Background(), reqs)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range out {
		if r.Error != nil {
			h.t.Fatalf("start: %v", r.Error.Error)
		}
	}
}

// gcPercent is the collector's target as it is.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestStopOfManyRelaxesTheCollector: a stop of memory.After sessions
// relaxes the collector once, for the run of their ends, and puts it back
// before the answer; every end is written as ever.
func TestStopOfManyRelaxesTheCollector(t *testing.T) {
	h := start(t, nil)
	startMany(h, memory.After)
	percent, times := gcPercent(), memory.RelaxedTimes()
	out, err := h.client.StopBatch(context.Background(), ipc.StopBatchRequest{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != memory.After {
		t.Fatalf("%d stopped, want %d", len(out), memory.After)
	}
	for _, r := range out {
		if r.Error != nil || r.Session == nil || r.Session.State != ipc.StateEnded {
			t.Fatalf("stop %s: %+v", r.ID, r)
		}
		if _, err := os.Stat(filepath.Join(r.Session.ProjectDir, ".sessiond", "handoff.json")); err != nil {
			t.Fatalf("handoff of %s: %v", r.ID, err)
		}
	}
	if got := memory.RelaxedTimes() - times; got != 1 {
		t.Fatalf("the collector was relaxed %d times for a stop of %d, want once", got, memory.After)
	}
	if p := gcPercent(); p != percent {
		t.Fatalf("the collector's target after the stop: %d, want %d as before", p, percent)
	}
}

// TestShutdownOfManyRelaxesTheCollector: a shutdown that stops
// memory.After sessions relaxes the collector as a stop of them does.
func TestShutdownOfManyRelaxesTheCollector(t *testing.T) {
	h := start(t, nil)
	startMany(h, memory.After)
	percent, times := gcPercent(), memory.RelaxedTimes()
	h.stop()
	if got := memory.RelaxedTimes() - times; got != 1 {
		t.Fatalf("the collector was relaxed %d times for a shutdown of %d sessions, want once", got, memory.After)
	}
	if p := gcPercent(); p != percent {
		t.Fatalf("the collector's target after the shutdown: %d, want %d as before", p, percent)
	}
}
