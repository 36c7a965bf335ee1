package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/sessiond/sessiond/ipc"
)

// TestWaitEndReadsTheRecordAfterMissedEvents: start --wait's end may be
// among the events a missed event stands for (a stream too far behind, in
// a burst of other sessions' events): the waiter asks for the record then,
// goes on waiting while the session lives, and ends with its status once
// it has ended, without an ended event of its own.
func TestWaitEndReadsTheRecordAfterMissedEvents(t *testing.T) {
	dir, err := os.MkdirTemp("", "sw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	const id = "w4it3nd0"
	code := 3
	ended := ipc.Session{ID: id, State: ipc.StateEnded, EndReason: "error", ExitCode: &code}
	var lookups atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		for range 2 {
			_ = enc.Encode(ipc.Event{Type: ipc.EventMissed, Message: "12 events missed", Data: json.RawMessage(`{"missed":12}`)})
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // no ended event ever comes
	})
	mux.HandleFunc("GET /v1/sessions/"+id, func(w http.ResponseWriter, r *http.Request) {
		rec := ended
		if lookups.Add(1) == 1 {
			rec = ipc.Session{ID: id, State: ipc.StateRunning}
		}
		_ = json.NewEncoder(w).Encode(rec)
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	var out, errOut bytes.Buffer
	a := &app{out: &out, errOut: &errOut, client: &ipc.Client{Socket: sock}}
	events, err := a.client.Events(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	err = a.waitEnd(t.Context(), events, id)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ipc.ExitStatus(&ended) {
		t.Fatalf("waitEnd: %v, want the ended session's exit status %d", err, ipc.ExitStatus(&ended))
	}
	if n := lookups.Load(); n != 2 {
		t.Errorf("the record was read %d times, want once per missed event (2): running, then ended", n)
	}
}
