package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/ipc"
)

// busReceiver records the events of the webhooks it gets; a request to
// /hang waits until the test ends.
type busReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	events  []string
	release chan struct{}
}

func newBusReceiver(t testing.TB) *busReceiver {
	r := &busReceiver{release: make(chan struct{})}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.URL.Path == "/hang" {
			select {
			case <-req.Context().Done():
			case <-r.release:
			}
			return
		}
		var p struct {
			Event string `json:"event"`
		}
		_ = json.Unmarshal(body, &p)
		r.mu.Lock()
		r.events = append(r.events, p.Event)
		r.mu.Unlock()
	}))
	t.Cleanup(func() {
		close(r.release)
		r.Close()
	})
	return r
}

func (r *busReceiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// noSessions is a daemon that knows no session of the events.
type noSessions struct{}

func (noSessions) Subject(string, bool) (Subject, bool)    { return Subject{}, false }
func (noSessions) LiveSubject(string, int) (Subject, bool) { return Subject{}, false }

// newService makes the notifications of a daemon with the given rules, its
// notifier closed at the end of the test.
func newService(t testing.TB, rules ...config.NotifyRule) *Service {
	t.Helper()
	cfg := configfile.Default()
	cfg.Notify = rules
	x, err := NewService(cfg, noSessions{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A hanging sink is cut short: the tests have seen what they need.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		x.Close(ctx)
	})
	return x
}

// since is an agent_waiting event's data: the wait began n seconds into
// the test's day.
func since(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"state":"waiting","since":"2026-12-01T00:00:%02dZ"}`, n))
}

func TestNotificationsFromTheBus(t *testing.T) {
	rcv := newBusReceiver(t)
	x := newService(t, config.NotifyRule{
		Name:    "all",
		On:      []string{"agent_waiting", "restart_limit", "failed", "checkpoint_failed", "budget", "started", "warned"},
		Webhook: rcv.URL + "/all",
	})
	t0 := time.Now()
	for i, ev := range []ipc.Event{
		// One waiting spell (the wait's start, as the record keeps it),
		// however often it is told of.
		{Type: ipc.EventAgentWaiting, SessionID: "s1", Data: since(1)},
		{Type: ipc.EventAgentWaiting, SessionID: "s1", Data: since(1)},
		{Type: ipc.EventAgentWaiting, SessionID: "s1", Data: since(1)},
		// Another session's spell is its own.
		{Type: ipc.EventAgentWaiting, SessionID: "s2", Data: since(1)},
		// Working ends the spell; the next wait is a new one.
		{Type: ipc.EventAgentWorking, SessionID: "s1"},
		{Type: ipc.EventAgentWaiting, SessionID: "s1", Data: since(2)},
		{Type: ipc.EventAgentIdle, SessionID: "s1"},
		{Type: ipc.EventAgentWaiting, SessionID: "s1", Data: since(3)},
		{Type: ipc.EventAgentWaiting, SessionID: "s1", Data: since(3)},
		{Type: ipc.EventFailed, SessionID: "s3", Data: json.RawMessage(`{"restart_limit":true}`)},
		{Type: ipc.EventFailed, SessionID: "s4", Message: "preflight failed"},
		{Type: ipc.EventCheckpoint, SessionID: "s5", Data: json.RawMessage(`{"id":"abc","files_changed":1}`)},
		{Type: ipc.EventCheckpoint, SessionID: "s5", Data: json.RawMessage(`{"error":"git: disk full"}`)},
		{Type: ipc.EventActivity, SessionID: "s5"},
		{Type: ipc.EventBudget, SessionID: "s5"},
		{Type: ipc.EventStarted, SessionID: "s6"},
		// The deadline's warning and the waiting's are warned; the
		// budget's is told by the budget event that comes with it.
		{Type: ipc.EventWarned, SessionID: "s7", Data: json.RawMessage(`{"at":"2026-01-01T00:00:00Z","reason":"budget"}`)},
		{Type: ipc.EventWarned, SessionID: "s7", Data: json.RawMessage(`{"at":"2026-01-01T00:00:00Z","reason":"waiting"}`)},
		{Type: ipc.EventWarned, SessionID: "s7", Data: json.RawMessage(`{"at":"2026-01-01T00:00:00Z"}`)},
	} {
		// Each event at a time of its own, as the sessions publish them.
		ev.Time = t0.Add(time.Duration(i) * time.Millisecond)
		x.Observe(ev)
	}
	want := "agent_waiting agent_waiting agent_waiting agent_waiting restart_limit failed checkpoint_failed budget started warned warned"
	// The receiver sees the last request before its sender counts it sent.
	deadline := time.Now().Add(10 * time.Second)
	for (strings.Join(rcv.got(), " ") != want || x.n.Stats().Sent < 11) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := strings.Join(rcv.got(), " "); got != want {
		t.Errorf("notifications %q, want %q", got, want)
	}
	st := x.n.Stats()
	if st.Duplicates != 3 || st.Sent != 11 {
		t.Errorf("counters %+v, want 3 repeats of a waiting spell left out and 11 sent", st)
	}
}

func TestNotificationsNeverBlockThePublisher(t *testing.T) {
	rcv := newBusReceiver(t)
	x := newService(t, config.NotifyRule{
		Name: "hang", On: []string{"failed"}, Webhook: rcv.URL + "/hang",
		Timeout: config.Duration{Duration: time.Minute}, Retries: new(int),
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			x.Observe(ipc.Event{Type: ipc.EventFailed, SessionID: fmt.Sprint("s", i)})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("publishing 1000 events did not return while the sink hangs")
	}
	st := x.n.Stats()
	if st.Pending > 33 || st.Queued+st.Dropped != 1000 {
		t.Errorf("counters %+v, want at most 33 pending and every event queued or dropped", st)
	}
}

func TestNotificationsWithoutRulesCostNothing(t *testing.T) {
	x := newService(t)
	x.Observe(ipc.Event{Type: ipc.EventFailed, SessionID: "s1"})
	if st := x.n.Stats(); st.Published != 0 {
		t.Errorf("an event no rule is for reached the notifier: %+v", st)
	}
}

// BenchmarkNotifyTap measures what the bus's tap adds to publishing an
// event: with no rule for it, and with a rule for it whose sink hangs, so
// that past the first 33 each notification is built, matched and dropped.
func BenchmarkNotifyTap(b *testing.B) {
	for _, bc := range []struct {
		name string
		on   []string
	}{{"no-rule", []string{"budget"}}, {"matched-queue-full", []string{"failed"}}} {
		b.Run(bc.name, func(b *testing.B) {
			rcv := newBusReceiver(b)
			x := newService(b, config.NotifyRule{On: bc.on, Webhook: rcv.URL + "/hang", Retries: new(int)})
			ev := ipc.Event{Type: ipc.EventFailed, SessionID: "s1", Time: time.Now()}
			b.ReportAllocs()
			for b.Loop() {
				x.Observe(ev)
			}
		})
	}
}
