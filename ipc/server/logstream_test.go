package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// stampedBackend answers logs with the time options it got, and for
// session "old" (a log without times) refuses a range before any output.
type stampedBackend struct{ backend }

func (b *stampedBackend) SessionLogs(ctx context.Context, c ipc.Caller, id string, opt ipc.LogOptions, w io.Writer) error {
	if id == "old" && !opt.Since.IsZero() {
		return ipc.Conflict("the log of session old has no timestamps")
	}
	if rep, ok := w.(ipc.StampsReporter); ok && opt.Timestamps {
		rep.ReportStamps(ipc.LogStampsPartial)
	}
	_, err := fmt.Fprintf(w, "timestamps=%v since=%s until=%s\n", opt.Timestamps,
		opt.Since.UTC().Format(time.RFC3339), opt.Until.UTC().Format(time.RFC3339))
	return err
}

func TestLogsTimeParams(t *testing.T) {
	b := &stampedBackend{backend{sessions: []ipc.Session{{ID: "s1"}, {ID: "old"}}}}
	c, sock := serve(t, b, nil)
	since := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ls, err := c.Logs(context.Background(), "s1", ipc.LogOptions{Timestamps: true, Since: since, Until: since.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(ls)
	ls.Close()
	if want := "timestamps=true since=2030-01-02T03:04:05Z until=2030-01-02T04:04:05Z\n"; string(body) != want {
		t.Errorf("logs = %q, want %q", body, want)
	}
	if ls.Stamps != ipc.LogStampsPartial {
		t.Errorf("Stamps = %q, want %q from the %s header", ls.Stamps, ipc.LogStampsPartial, ipc.LogStampsHeader)
	}

	// An error before any output is the answer, not an empty 200.
	if _, err := c.Logs(context.Background(), "old", ipc.LogOptions{Since: since}); !errors.Is(err, ipc.ErrConflict) {
		t.Errorf("a range over a log without times: %v, want a conflict", err)
	}

	// A duration is before the daemon's now.
	resp, got := rawRequest(t, sock, "GET", "/v1/sessions/s1/logs?since=1h", "")
	var sinceText, untilText string
	if _, err := fmt.Sscanf(got, "timestamps=false since=%s until=%s", &sinceText, &untilText); err != nil || resp.StatusCode != 200 {
		t.Fatalf("since=1h: %d %q (%v)", resp.StatusCode, got, err)
	}
	gotSince, err := time.Parse(time.RFC3339, sinceText)
	if d := time.Since(gotSince); err != nil || d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("since=1h became %q, %v ago (%v)", sinceText, d, err)
	}

	for _, q := range []string{"since=soon", "until=2030-02-30T00:00:00Z", "timestamps=maybe", "since=1m&until=1h", "since=-1h"} {
		resp, body := rawRequest(t, sock, "GET", "/v1/sessions/s1/logs?"+q, "")
		if resp.StatusCode != 400 {
			t.Errorf("%s: %d %s, want 400", q, resp.StatusCode, body)
		}
	}
}
