package notify

import (
	"encoding/json"
	"mime"
	"testing"
	"time"

	"github.com/sessiond/sessiond/config"
)

func TestTitle(t *testing.T) {
	code0, code2 := 0, 2
	tests := []struct {
		ev   Event
		want string
	}{
		{Event{Type: "ended", Name: "web", EndReason: "complete", ExitCode: &code0}, "Session web ended: complete"},
		{Event{Type: "ended", SessionID: "k3x", EndReason: "error", ExitCode: &code2}, "Session k3x ended: error (exit 2)"},
		{Event{Type: "ended", SessionID: "k3x", EndReason: "error", Signal: "SIGKILL"}, "Session k3x ended: error (SIGKILL)"},
		{Event{Type: "ended", SessionID: "k3x"}, "Session k3x ended: unknown"},
		{Event{Type: "warned", Name: "web"}, "Session web is near its deadline"},
		{Event{Type: "agent_waiting", Name: "web"}, "Session web is waiting for input"},
		{Event{Type: "failed"}, "Session (unknown) failed"},
		{Event{Type: "restart_limit", Name: "web"}, "Session web will not be restarted"},
		{Event{Type: "checkpoint_failed", Name: "web"}, "Checkpoint failed in session web"},
		{Event{Type: "budget", Name: "web"}, "Session web is near its budget"},
		{Event{Type: "test"}, "sessiond test notification"},
		{Event{Type: "custom", Name: "web"}, "Session web: custom"},
	}
	for _, tt := range tests {
		if got := Title(tt.ev); got != tt.want {
			t.Errorf("Title(%+v) = %q, want %q", tt.ev, got, tt.want)
		}
	}
	for _, ev := range config.NotifyEvents {
		if ev == config.NotifyCrashed {
			continue // an ended event
		}
		if got := Title(Event{Type: ev, Name: "x"}); got == "Session x: "+ev {
			t.Errorf("event %s has no title of its own", ev)
		}
	}
}

func TestPayloadFields(t *testing.T) {
	ev := goldenEvent()
	ev.Deadline = time.Date(2025, 3, 14, 16, 0, 0, 0, time.UTC)
	p := NewPayload(ev, "ci", "h")
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	// Every documented field, always present.
	for _, k := range []string{"version", "id", "event", "time", "host", "rule", "session_id", "session_name", "project_dir",
		"project_id", "end_reason", "exit_code", "signal", "handoff_file", "deadline", "message", "title", "text"} {
		if _, ok := m[k]; !ok {
			t.Errorf("payload lacks %q", k)
		}
	}
	if len(m) != 18 {
		t.Errorf("payload has %d fields, want the 18 documented", len(m))
	}
	if m["deadline"] != "2025-03-14T16:00:00Z" {
		t.Errorf("deadline = %v", m["deadline"])
	}
	if q := NewPayload(ev, "other", "h"); q.ID == p.ID {
		t.Error("two rules' deliveries of one event share an id")
	}
	if q := NewPayload(ev, "ci", "h"); q.ID != p.ID {
		t.Error("the id of one delivery is not stable")
	}
}

func TestHeaderValue(t *testing.T) {
	if got := headerValue("a\r\nb\tc"); got != "a  b c" {
		t.Errorf("headerValue = %q", got)
	}
	in := "Session café ended: error ⚠"
	enc := headerValue(in)
	if enc == in {
		t.Fatal("non-ASCII header not encoded")
	}
	dec, err := new(mime.WordDecoder).DecodeHeader(enc)
	if err != nil || dec != in {
		t.Errorf("decoded %q (%v), want %q", dec, err, in)
	}
}

func TestSlackEscapes(t *testing.T) {
	p := Payload{Title: "a <b> & c", Text: "<@here>"}
	if got, want := slackText(&p), "*a &lt;b&gt; &amp; c*\n&lt;@here&gt;"; got != want {
		t.Errorf("slackText = %q, want %q", got, want)
	}
}
