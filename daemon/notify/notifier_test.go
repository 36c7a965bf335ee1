package notify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestHangingSinkDelaysNothing: a command that hangs for a minute delays
// neither Publish nor another rule, and Close with a deadline kills it.
func TestHangingSinkDelaysNothing(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "hang.sh", `sleep 60 &
echo $! > child.pid
echo $$ > leader.pid
wait
`)
	srv := newHookServer(t)
	rules := []config.NotifyRule{
		{Name: "hangs", On: []string{"ended"}, Command: []string{"./hang.sh"}, Timeout: config.Duration{Duration: 2 * time.Minute}},
		{Name: "hook", On: []string{"ended"}, Webhook: srv.URL},
	}
	n, err := New(rules, Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ev := endedEvent("h1", "error")
	ev.ProjectDir = dir
	start := time.Now()
	n.Publish(ev, nil)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Publish took %s with a hanging sink", took)
	}
	srv.next(t, 5*time.Second)
	leader := readPid(t, filepath.Join(dir, "leader.pid"))
	child := readPid(t, filepath.Join(dir, "child.pid"))

	// The hanging rule's next notification waits in its queue; the other
	// rule's is sent at once.
	ev.SessionID = "h2"
	n.Publish(ev, nil)
	srv.next(t, 5*time.Second)
	if gone(leader) {
		t.Fatal("the hanging command ended early; the test proves nothing")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = n.Close(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "2 notifications not sent") {
		t.Errorf("Close = %v, want 2 not sent by the deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %s with a 300ms deadline", took)
	}
	waitFor(t, 5*time.Second, "the hanging command's group to be killed", func() bool { return gone(leader) && gone(child) })
	if s := n.Stats(); s.Sent != 2 || s.Dropped != 2 || s.Pending != 0 {
		t.Errorf("stats = %+v, want 2 sent, 2 dropped (one stopped, one queued), none pending", s)
	}
}

// TestFloodBounded: a flood of events against a sink that hangs keeps the
// queue at its bound, counts every drop, and logs drops rarely.
func TestFloodBounded(t *testing.T) {
	srv := newHookServer(t, 0)
	clock := newFakeClock()
	rule := config.NotifyRule{Name: "slow", On: []string{"ended"}, Webhook: srv.URL, Retries: intp(0)}
	n, logs := newNotifier(t, []config.NotifyRule{rule}, Options{QueueSize: 4, Now: clock.now})
	const events = 1000
	// The first is being sent (and hangs) before the flood comes.
	n.Publish(endedEvent("f0", "error"), nil)
	srv.next(t, 5*time.Second)
	for i := 1; i < events; i++ {
		n.Publish(endedEvent(fmt.Sprint("f", i), "error"), nil)
	}
	s := n.Stats()
	if s.Published != events || s.Queued != 5 || s.Dropped != events-5 || s.Pending != 5 {
		t.Errorf("stats = %+v: want 5 queued (the queue of 4 and the one being sent), the rest dropped", s)
	}
	drops := logs.FilterMessage("notification dropped: queue full")
	if drops.Len() != 1 {
		t.Errorf("logged %d drops, want 1 (rate-limited)", drops.Len())
	}
	clock.add(logEvery + time.Second)
	n.Publish(endedEvent("late", "error"), nil)
	all := logs.FilterMessage("notification dropped: queue full").All()
	if len(all) != 2 {
		t.Fatalf("logged %d drops after the interval, want 2", len(all))
	}
	if got, want := all[1].ContextMap()["suppressed_since_last"], int64(s.Dropped-1); got != want {
		t.Errorf("suppressed_since_last = %v, want %d", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := n.Close(ctx); err == nil {
		t.Error("Close with a hanging webhook and a full queue returned no error")
	}
	// The 5 queued are dropped too: the one in flight stopped, the 4 never sent.
	if s := n.Stats(); s.Pending != 0 || s.Queued != 5 || s.Dropped != events-5+1+5 || s.Sent != 0 {
		t.Errorf("after Close: %+v, want the 5 queued dropped as well", s)
	}
}

// TestMaxPendingAcrossRules: the total bound holds across rules.
func TestMaxPendingAcrossRules(t *testing.T) {
	srv := newHookServer(t, 0)
	var rules []config.NotifyRule
	for i := range 10 {
		rules = append(rules, config.NotifyRule{Name: fmt.Sprint("r", i), On: []string{"ended"}, Webhook: srv.URL, Retries: intp(0)})
	}
	n, _ := newNotifier(t, rules, Options{QueueSize: 32, MaxPending: 8})
	for i := range 5 {
		n.Publish(endedEvent(fmt.Sprint("m", i), "error"), nil)
	}
	if s := n.Stats(); s.Queued != 8 || s.Dropped != 42 || s.Pending > 8 {
		t.Errorf("stats = %+v, want 8 queued and 42 dropped of 50", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = n.Close(ctx)
}

// TestSpellDedup: one agent_waiting per waiting spell, however many hook
// calls report it.
func TestSpellDedup(t *testing.T) {
	srv := newHookServer(t)
	rule := config.NotifyRule{On: []string{"agent_waiting"}, Webhook: srv.URL}
	n, _ := newNotifier(t, []config.NotifyRule{rule}, Options{})
	waiting := func(session, spell string) Event {
		return Event{Type: config.NotifyAgentWaiting, SessionID: session, Spell: spell, Message: "waiting for permission"}
	}
	for range 5 {
		n.Publish(waiting("s1", "2025-01-01T12:00:00Z"), nil)
	}
	srv.next(t, 5*time.Second)
	n.Publish(waiting("s2", "2025-01-01T12:00:00Z"), nil) // another session
	srv.next(t, 5*time.Second)
	n.Publish(waiting("s1", "2025-01-01T12:05:00Z"), nil) // a new spell
	srv.next(t, 5*time.Second)
	n.Publish(waiting("s1", "2025-01-01T12:05:00Z"), nil)
	srv.none(t, 100*time.Millisecond)
	if s := n.Stats(); s.Duplicates != 5 || s.Queued != 3 {
		t.Errorf("stats = %+v, want 5 duplicates and 3 queued", s)
	}
	// An end forgets the session's spells.
	n.Publish(endedEvent("s1", "complete"), nil)
	n.Publish(waiting("s1", "2025-01-01T12:05:00Z"), nil)
	srv.next(t, 5*time.Second)
}

// TestMinInterval: min_interval holds back a rule's notifications for the
// same session, not for other sessions or other rules.
func TestMinInterval(t *testing.T) {
	quiet, loud := newHookServer(t), newHookServer(t)
	clock := newFakeClock()
	rules := []config.NotifyRule{
		{Name: "quiet", On: []string{"ended"}, Webhook: quiet.URL, MinInterval: config.Duration{Duration: 10 * time.Minute}},
		{Name: "loud", On: []string{"ended"}, Webhook: loud.URL},
	}
	n, _ := newNotifier(t, rules, Options{Now: clock.now})
	steps := []struct {
		after   time.Duration
		session string
		quiet   bool
	}{
		{0, "s1", true},
		{time.Minute, "s1", false},
		{0, "s2", true},
		{8 * time.Minute, "s1", false},
		{2 * time.Minute, "s1", true}, // 11 minutes after the first
	}
	for i, st := range steps {
		clock.add(st.after)
		ev := endedEvent(st.session, "error")
		ev.Message = fmt.Sprint("step ", i)
		n.Publish(ev, nil)
		if got := loud.next(t, 5*time.Second); !strings.Contains(string(got.body), ev.Message) {
			t.Errorf("step %d: loud rule got %s", i, got.body)
		}
		if st.quiet {
			if got := quiet.next(t, 5*time.Second); !strings.Contains(string(got.body), ev.Message) {
				t.Errorf("step %d: quiet rule got %s", i, got.body)
			}
		}
	}
	quiet.none(t, 100*time.Millisecond)
	if s := n.Stats(); s.Suppressed != 2 {
		t.Errorf("suppressed = %d, want 2", s.Suppressed)
	}
}

// TestLifecycleNoLeak: a notifier that ran commands and webhooks leaves no
// goroutine behind once closed.
func TestLifecycleNoLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := newHookServer(t)
	defer srv.Close()
	rules := []config.NotifyRule{
		{On: []string{"ended"}, Webhook: srv.URL},
		{On: []string{"ended"}, Command: []string{"sh", "-c", "cat >/dev/null"}},
	}
	n, err := New(rules, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		n.Publish(endedEvent(fmt.Sprint("l", i), "complete"), nil)
	}
	waitFor(t, 10*time.Second, "20 deliveries", func() bool { return n.Stats().Sent == 20 })
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Close()
}

// TestWorkerStopsWhenIdle: a rule's worker goes away after a while without
// work, and comes back with the next notification.
func TestWorkerStopsWhenIdle(t *testing.T) {
	srv := newHookServer(t)
	n, _ := newNotifier(t, []config.NotifyRule{{On: []string{"ended"}, Webhook: srv.URL}}, Options{})
	n.idle = 20 * time.Millisecond
	workers := func() int {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.queues)
	}
	n.Publish(endedEvent("w1", "error"), nil)
	srv.next(t, 5*time.Second)
	waitFor(t, 5*time.Second, "the worker to stop", func() bool { return workers() == 0 })
	n.Publish(endedEvent("w2", "error"), nil)
	srv.next(t, 5*time.Second)
}

func TestProjectRules(t *testing.T) {
	srv := newHookServer(t)
	n, logs := newNotifier(t, nil, Options{})
	project := []config.NotifyRule{
		{On: []string{"nonsense"}, Webhook: srv.URL},
		{Name: "mine", On: []string{"ended:timeout"}, Webhook: srv.URL},
	}
	n.Publish(endedEvent("p1", "error"), project)
	n.Publish(endedEvent("p2", "timeout"), project)
	if got := srv.next(t, 5*time.Second); !strings.Contains(string(got.body), `"session_id":"p2"`) || !strings.Contains(string(got.body), `"rule":"mine"`) {
		t.Errorf("got %s, want the timeout of p2 by rule mine", got.body)
	}
	srv.none(t, 100*time.Millisecond)
	if e := logs.FilterMessage("project notify rule skipped").All(); len(e) != 1 || !strings.Contains(fmt.Sprint(e[0].ContextMap()["error"]), "unknown event") {
		t.Errorf("skipped-rule log = %v, want one saying unknown event", e)
	}
}

func TestFilters(t *testing.T) {
	srv := newHookServer(t)
	home := t.TempDir()
	rules := []config.NotifyRule{{On: []string{"ended"}, Webhook: srv.URL, Project: "~/work/**", SessionName: "night-*"}}
	n, _ := newNotifier(t, rules, Options{})
	owner := &Owner{UID: os.Getuid(), GID: os.Getgid(), Home: home}
	tests := []struct {
		dir, name string
		want      bool
	}{
		{home + "/work/api", "night-1", true},
		{home + "/work", "night-2", true},
		{home + "/play/api", "night-3", false},
		{home + "/work/api", "day-1", false},
		{"/elsewhere/work/api", "night-4", false},
	}
	for _, tt := range tests {
		ev := endedEvent(tt.name, "error")
		ev.Name, ev.ProjectDir, ev.Owner = tt.name, tt.dir, owner
		n.Publish(ev, nil)
	}
	for _, tt := range tests {
		if !tt.want {
			continue
		}
		got := srv.next(t, 5*time.Second)
		if !strings.Contains(string(got.body), `"session_name":"night-`) {
			t.Errorf("delivered %s", got.body)
		}
	}
	srv.none(t, 100*time.Millisecond)
	if s := n.Stats(); s.Queued != 2 {
		t.Errorf("queued %d, want 2", s.Queued)
	}
}

func TestPublishAfterClose(t *testing.T) {
	srv := newHookServer(t)
	n, _ := newNotifier(t, []config.NotifyRule{{On: []string{"ended"}, Webhook: srv.URL}}, Options{})
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.Publish(endedEvent("c1", "error"), nil)
	if s := n.Stats(); s.Dropped != 1 || s.Queued != 0 {
		t.Errorf("stats = %+v, want the event dropped", s)
	}
	if err := n.Test(context.Background(), config.NotifyRule{On: []string{"ended"}, Webhook: srv.URL}, FromDaemon, Event{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Test after Close = %v, want ErrClosed", err)
	}
	srv.none(t, 50*time.Millisecond)
}

func TestSetRules(t *testing.T) {
	_, err := New([]config.NotifyRule{{On: []string{"ended"}}}, Options{})
	var ne *config.NotifyError
	if !errors.As(err, &ne) || ne.Key != "notify[0].command" {
		t.Fatalf("New with a rule without sink = %v, want notify[0].command", err)
	}
	srv := newHookServer(t)
	n, _ := newNotifier(t, nil, Options{})
	if _, ok := n.Rule("a"); ok {
		t.Fatal("Rule found a rule in an empty set")
	}
	if err := n.SetRules([]config.NotifyRule{{Name: "a", On: []string{"warned"}, Webhook: srv.URL}}); err != nil {
		t.Fatal(err)
	}
	if r, ok := n.Rule("a"); !ok || r.Webhook != srv.URL {
		t.Fatalf("Rule(a) = %+v, %v", r, ok)
	}
	if got := len(n.Rules()); got != 1 {
		t.Errorf("Rules() has %d rules", got)
	}
	n.Publish(Event{Type: config.NotifyWarned, SessionID: "r1"}, nil)
	srv.next(t, 5*time.Second)
}
