package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
)

// Defaults of Options.
const (
	DefaultQueueSize  = 32
	DefaultMaxPending = 1024
)

// workerIdle is how long a rule's worker waits for work before it stops; the
// next notification of the rule starts a new one.
const workerIdle = time.Minute

// maxSpellSessions bounds the sessions whose current spells are
// remembered; an ended event forgets its session's, so only sessions that
// never end (lost in a crash) could fill it.
const maxSpellSessions = 4096

// ErrClosed is returned by Test once the Notifier is closed.
var ErrClosed = errors.New("notifier closed")

// Options configures a Notifier; the zero value is usable.
type Options struct {
	Logger *zap.Logger
	// QueueSize is how many notifications each rule holds while its sink
	// is busy (DefaultQueueSize when 0); more are dropped.
	QueueSize int
	// MaxPending bounds the notifications queued or being sent across all
	// rules (DefaultMaxPending when 0); more are dropped.
	MaxPending int
	// Host names this machine in payloads (os.Hostname when "").
	Host string
	// RetryBackoff is the delay before a webhook's first retry, doubled
	// for each next one up to 30s (1s when 0).
	RetryBackoff time.Duration
	// AllowHosts are notify_allow_hosts; OwnListeners the daemon's own TCP
	// listeners, which another user's project may not reach either.
	AllowHosts   []config.HostPattern
	OwnListeners []netip.AddrPort
	// Now is the clock that min_interval is measured with (time.Now when nil).
	Now func() time.Time
}

// Stats counts what a Notifier did since it was made. Every published event
// ends as a duplicate or is matched against the rules; every match is
// queued, suppressed or dropped; every queued one is sent, failed or
// dropped.
type Stats struct {
	// Published counts the events given to Publish.
	Published uint64
	// Duplicates counts events left out as a repeat of the same spell.
	Duplicates uint64
	// Queued counts notifications queued (one per matching rule).
	Queued uint64
	// Suppressed counts notifications left out by a rule's min_interval.
	Suppressed uint64
	// Dropped counts notifications dropped: a full queue, a Notifier
	// already closed, or not sent by the shutdown deadline.
	Dropped uint64
	// Sent counts notifications their sink took.
	Sent uint64
	// Failed counts notifications whose sink failed (after its retries).
	Failed uint64
	// Pending is the number queued or being sent now.
	Pending int64
}

// Notifier matches events against notification rules and sends them from
// queues of its own. Its methods may be called from any goroutine.
type Notifier struct {
	log    *zap.Logger
	opt    Options
	client *http.Client
	// guarded sends the webhooks of other users' projects under a root
	// daemon (projectGuard).
	guarded *http.Client
	rates   *rateLog
	idle    time.Duration // workerIdle; tests shorten it

	// ctx ends when Close gives up waiting: sends in flight stop, and the
	// commands they run are killed.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	rules  []*compiled
	queues map[string]*queue
	// spells holds each session's current spell per event type.
	spells map[string]map[string]string
	// quiet holds, per rule and session, when its min_interval ends.
	quiet      map[string]time.Time
	quietPrune int

	pending                                   atomic.Int64
	published, duplicates, queued, suppressed atomic.Uint64
	dropped, sent, failed                     atomic.Uint64
}

// queue is one rule's bounded queue and the sink its worker sends to.
type queue struct {
	rule *compiled
	sink sink
	ch   chan *delivery
}

// delivery is one notification: an event for one rule.
type delivery struct {
	rule    *compiled
	ev      Event
	payload Payload
}

// sink sends one notification, within ctx.
type sink interface {
	send(ctx context.Context, d *delivery) error
}

// New returns a Notifier for the daemon's rules (the [[notify]] tables of
// the daemon config), which it validates.
func New(rules []config.NotifyRule, opt Options) (*Notifier, error) {
	if opt.Logger == nil {
		opt.Logger = zap.NewNop()
	}
	if opt.QueueSize <= 0 {
		opt.QueueSize = DefaultQueueSize
	}
	if opt.MaxPending <= 0 {
		opt.MaxPending = DefaultMaxPending
	}
	if opt.Host == "" {
		opt.Host, _ = os.Hostname()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	n := &Notifier{
		log: opt.Logger.Named("notify"), opt: opt, client: newHTTPClient(nil), guarded: newHTTPClient(projectGuard(opt.AllowHosts, opt.OwnListeners)),
		rates:  newRateLog(logEvery, opt.Now),
		queues: map[string]*queue{}, spells: map[string]map[string]string{}, quiet: map[string]time.Time{},
		quietPrune: 1024, idle: workerIdle,
	}
	if err := n.SetRules(rules); err != nil {
		return nil, err
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	return n, nil
}

// SetRules replaces the daemon's rules (a config reload). Notifications
// already queued are still sent by the rules they were queued for.
func (n *Notifier) SetRules(rules []config.NotifyRule) error {
	if err := config.ValidateNotifyRules(rules); err != nil {
		return err
	}
	cs := make([]*compiled, 0, len(rules))
	for _, r := range rules {
		c, err := compile(r, FromDaemon, "")
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	n.mu.Lock()
	n.rules = cs
	n.mu.Unlock()
	return nil
}

// Rule returns the daemon's rule with the given name.
func (n *Notifier) Rule(name string) (config.NotifyRule, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.rules {
		if c.rule.Name == name {
			return c.rule, true
		}
	}
	return config.NotifyRule{}, false
}

// Rules returns the daemon's rules.
func (n *Notifier) Rules() []config.NotifyRule {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]config.NotifyRule, len(n.rules))
	for i, c := range n.rules {
		out[i] = c.rule
	}
	return out
}

// Publish matches ev against the daemon's rules and the rules of the
// event's project (project, from its sessiond.toml) and queues a
// notification for each rule that matches. It never blocks on a sink: it
// returns once the notifications are queued or, when a queue is full,
// dropped. An invalid project rule is logged and skipped.
func (n *Notifier) Publish(ev Event, project []config.NotifyRule) {
	n.published.Add(1)
	ev = ev.clone()
	if ev.Time.IsZero() {
		ev.Time = n.opt.Now()
	}
	var prules []*compiled
	for i, r := range project {
		c, err := compile(r, FromProject, ev.ProjectDir)
		if err != nil {
			n.logRated("invalid\x00"+ev.ProjectDir, "project notify rule skipped",
				zap.String("project", ev.ProjectDir), zap.Int("rule", i), zap.Error(err))
			continue
		}
		prules = append(prules, c)
	}
	home := ownerHome(ev.Owner)

	n.mu.Lock()
	defer n.mu.Unlock()
	if n.repeat(&ev) {
		n.duplicates.Add(1)
		return
	}
	now := n.opt.Now()
	for _, c := range slices.Concat(n.rules, prules) {
		if !c.matches(&ev, home) {
			continue
		}
		if n.closed {
			n.dropped.Add(1)
			n.logDrop(c, &ev, "notifier closed")
			continue
		}
		quietKey := c.key + "\x00" + ev.SessionID
		interval := c.rule.MinInterval.Duration
		if until, ok := n.quiet[quietKey]; ok && interval > 0 && now.Before(until) {
			n.suppressed.Add(1)
			continue
		}
		if !n.enqueue(c, &ev) {
			n.dropped.Add(1)
			n.logDrop(c, &ev, "queue full")
			continue
		}
		n.queued.Add(1)
		if interval > 0 {
			n.quiet[quietKey] = now.Add(interval)
			n.pruneQuiet(now)
		}
	}
}

// repeat reports whether ev repeats the current spell of its session, and
// records it otherwise. An ended event forgets the session's spells.
func (n *Notifier) repeat(ev *Event) bool {
	if ev.Type == config.NotifyEnded {
		delete(n.spells, ev.SessionID)
	}
	if ev.Spell == "" {
		return false
	}
	m := n.spells[ev.SessionID]
	if prev, ok := m[ev.Type]; ok && prev == ev.Spell {
		return true
	}
	if m == nil {
		if len(n.spells) >= maxSpellSessions {
			clear(n.spells)
		}
		m = map[string]string{}
		n.spells[ev.SessionID] = m
	}
	m[ev.Type] = ev.Spell
	return false
}

// pruneQuiet forgets the min_intervals that have ended, once the map has
// doubled since the last pruning.
func (n *Notifier) pruneQuiet(now time.Time) {
	if len(n.quiet) < n.quietPrune {
		return
	}
	for k, until := range n.quiet {
		if !now.Before(until) {
			delete(n.quiet, k)
		}
	}
	n.quietPrune = max(1024, 2*len(n.quiet))
}

// enqueue queues a notification of ev for c, starting the rule's worker
// when it has none; false means the rule's queue, or the total, is full.
// n.mu is held, so only the worker takes from the queue meanwhile.
func (n *Notifier) enqueue(c *compiled, ev *Event) bool {
	q := n.queues[c.key]
	if q != nil && len(q.ch) == cap(q.ch) {
		// Full: a flood costs no payload.
		return false
	}
	if n.pending.Add(1) > int64(n.opt.MaxPending) {
		n.pending.Add(-1)
		return false
	}
	if q == nil {
		q = &queue{rule: c, sink: n.sinkFor(c), ch: make(chan *delivery, n.opt.QueueSize)}
		n.queues[c.key] = q
		n.wg.Add(1)
		go n.work(q)
	}
	d := &delivery{rule: c, ev: *ev, payload: NewPayload(*ev, c.rule.Name, n.opt.Host)}
	select {
	case q.ch <- d:
		return true
	default:
		n.pending.Add(-1)
		return false
	}
}

// work sends a rule's notifications one after another, and stops after
// workerIdle without any, or when Close closes the queue.
func (n *Notifier) work(q *queue) {
	defer n.wg.Done()
	idle := time.NewTimer(n.idle)
	defer idle.Stop()
	for {
		select {
		case d, ok := <-q.ch:
			if !ok {
				return
			}
			n.deliver(q, d)
			n.pending.Add(-1)
			idle.Reset(n.idle)
		case <-idle.C:
			// Publish queues under n.mu, so with it held an empty queue
			// stays empty until the rule has no worker.
			n.mu.Lock()
			if !n.closed && len(q.ch) == 0 {
				delete(n.queues, q.rule.key)
				n.mu.Unlock()
				return
			}
			n.mu.Unlock()
			idle.Reset(n.idle)
		}
	}
}

func (n *Notifier) deliver(q *queue, d *delivery) {
	if n.ctx.Err() != nil {
		n.dropped.Add(1)
		return
	}
	start := time.Now()
	err := q.sink.send(n.ctx, d)
	fields := []zap.Field{zap.String("rule", q.rule.rule.Label()), zap.String("event", d.ev.Type),
		zap.String("session", d.ev.SessionID), zap.Duration("took", time.Since(start))}
	switch {
	case err == nil:
		n.sent.Add(1)
		n.log.Debug("notification sent", fields...)
	case n.ctx.Err() != nil:
		n.log.Warn("notification stopped by shutdown", append(fields, zap.Error(err))...)
		n.dropped.Add(1)
	default:
		n.logRated("fail\x00"+q.rule.key, "notification failed", append(fields, zap.Error(err))...)
		n.failed.Add(1)
	}
}

// sinkFor makes the sink of a rule.
func (n *Notifier) sinkFor(c *compiled) sink {
	timeout := c.rule.Timeout.Duration
	switch c.rule.Sink() {
	case config.SinkCommand:
		if timeout == 0 {
			timeout = defaultCommandTimeout
		}
		return &commandSink{argv: slices.Clone(c.rule.Command), timeout: timeout}
	case config.SinkWebhook:
		return newWebhookSink(c, n.client, n.guarded, n.opt.RetryBackoff)
	default:
		if timeout == 0 {
			timeout = defaultDesktopTimeout
		}
		return &desktopSink{timeout: timeout}
	}
}

// logDrop logs a dropped notification, at most once per logEvery.
func (n *Notifier) logDrop(c *compiled, ev *Event, why string) {
	n.logRated("drop", "notification dropped: "+why, zap.String("rule", c.rule.Label()),
		zap.String("event", ev.Type), zap.String("session", ev.SessionID))
}

// logRated writes a warning unless one with the same key was written less
// than logEvery ago; it then says how many were left out in between.
func (n *Notifier) logRated(key, msg string, fields ...zap.Field) {
	ok, skipped := n.rates.allow(key)
	if !ok {
		return
	}
	if skipped > 0 {
		fields = append(fields, zap.Int("suppressed_since_last", skipped))
	}
	n.log.Warn(msg, fields...)
}

// Stats returns the counters.
func (n *Notifier) Stats() Stats {
	return Stats{
		Published: n.published.Load(), Duplicates: n.duplicates.Load(), Queued: n.queued.Load(),
		Suppressed: n.suppressed.Load(), Dropped: n.dropped.Load(), Sent: n.sent.Load(),
		Failed: n.failed.Load(), Pending: n.pending.Load(),
	}
}

// Test sends ev through rule at once, bypassing queues, filters,
// de-duplication and min_interval, and returns what went wrong: for
// "sessionctl notify test". An ev with no Type is SampleEvent(). origin
// says whose rights the rule's secret is read with; ev.Owner is the user a
// command runs as.
func (n *Notifier) Test(ctx context.Context, rule config.NotifyRule, origin Origin, ev Event) error {
	n.mu.Lock()
	closed := n.closed
	n.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if ev.Type == "" {
		owner, dir := ev.Owner, ev.ProjectDir
		ev = SampleEvent()
		ev.Owner, ev.ProjectDir = owner, dir
	}
	if ev.Time.IsZero() {
		ev.Time = n.opt.Now()
	}
	c, err := compile(rule, origin, ev.ProjectDir)
	if err != nil {
		return fmt.Errorf("rule %s: %w", rule.Label(), err)
	}
	d := &delivery{rule: c, ev: ev.clone(), payload: NewPayload(ev, rule.Name, n.opt.Host)}
	if err := n.sinkFor(c).send(ctx, d); err != nil {
		return fmt.Errorf("rule %s: %w", rule.Label(), err)
	}
	return nil
}

// Close stops taking notifications and sends those queued until ctx ends;
// then it stops the sends in flight (killing their commands), drops the
// rest, and returns an error saying how many were not sent. It returns
// once every goroutine of the Notifier has ended.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.wg.Wait()
		return nil
	}
	n.closed = true
	for _, q := range n.queues {
		close(q.ch)
	}
	n.mu.Unlock()
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		left := n.pending.Load()
		n.cancel()
		<-done
		err = fmt.Errorf("notify: %d notifications not sent by the shutdown deadline: %w", left, ctx.Err())
	}
	n.cancel()
	n.client.CloseIdleConnections()
	n.guarded.CloseIdleConnections()
	return err
}

// clone returns a copy of ev that shares nothing the caller may change.
func (ev Event) clone() Event {
	if ev.ExitCode != nil {
		c := *ev.ExitCode
		ev.ExitCode = &c
	}
	if ev.Owner != nil {
		o := *ev.Owner
		o.Groups = slices.Clone(o.Groups)
		ev.Owner = &o
	}
	ev.Env = slices.Clone(ev.Env)
	return ev
}
