package sessions

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/registry"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// The queue holds the queued sessions (session.Enqueue) and starts them in
// order when they may start: a slot of their pool free (max_running), the
// pool's stagger passed since its last start, its quota not limited, the
// session they start after ended, the time they wait for come. One
// goroutine runs the passes, woken by whatever may let a session go: an
// end, a new queued session, a limit, a timer.
type queue struct {
	d *Service

	mu      sync.Mutex
	waiting []*queuedSession
	seq     uint64
	// pools are what the queue knows of each pool: its last start and its
	// limit.
	pools map[string]*poolState

	wake  chan struct{}
	timer session.Timer
	timAt time.Time
	// done ends the passes; stopped is closed once the last has.
	done, stopped chan struct{}
	stopOnce      sync.Once
}

// queuedSession is one session in the queue.
type queuedSession struct {
	s *session.Session
	// seq is its order of arrival; interactive comes before batch at one
	// priority.
	seq         uint64
	interactive bool
	// why is what holds it, as the last pass found.
	why string
}

// poolState is a pool's last start and the reset of its limited quota.
type poolState struct {
	lastStart    time.Time
	limitedUntil time.Time
	// lastResume is when the last session of an account that waited for
	// its limit's reset went on (resumes).
	lastResume time.Time
}

// resumeSpacing is the least time between two sessions of one pool that
// go on after a limit reset, whatever its stagger: a burst of them at the
// reset is what fails.
const resumeSpacing = 5 * time.Second

func newQueue(d *Service) *queue {
	q := &queue{d: d, pools: map[string]*poolState{}, wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go q.run()
	return q
}

// kick asks for a pass; it never blocks.
func (q *queue) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) run() {
	defer close(q.stopped)
	for {
		select {
		case <-q.wake:
			if q.d.closing.Load() {
				continue
			}
			q.pass()
		case <-q.done:
			return
		}
	}
}

// stop ends the passes (the daemon shuts down: what is queued stays
// queued, on disk, for the next one).
func (q *queue) stop() {
	q.stopOnce.Do(func() { close(q.done) })
	<-q.stopped
	q.mu.Lock()
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	q.mu.Unlock()
}

// add puts a queued session in the queue.
func (q *queue) add(s *session.Session, interactive bool) {
	q.mu.Lock()
	q.seq++
	q.waiting = append(q.waiting, &queuedSession{s: s, seq: q.seq, interactive: interactive})
	q.mu.Unlock()
	q.kick()
}

// config is the [pool.NAME] table of pool.
func (q *queue) config(pool string) config.Pool {
	return q.d.cfg.Pools[pool]
}

// limit marks pool limited until its quota resets.
func (q *queue) limit(pool string, until time.Time) {
	if pool == "" || until.IsZero() {
		return
	}
	q.mu.Lock()
	p := q.pool(pool)
	if until.After(p.limitedUntil) {
		p.limitedUntil = until
	}
	q.mu.Unlock()
	q.kick()
}

func (q *queue) pool(name string) *poolState {
	p := q.pools[name]
	if p == nil {
		p = &poolState{}
		q.pools[name] = p
	}
	return p
}

// started notes a start of pool outside the queue, for its stagger.
func (q *queue) started(pool string) {
	if pool == "" || q.config(pool).Stagger.Duration == 0 {
		return
	}
	q.mu.Lock()
	q.pool(pool).lastStart = q.d.clock.Now()
	q.mu.Unlock()
}

// holds reports why a new session of pool (and its agent's account)
// cannot start now ("" if it can): its account's quota is limited, its
// pool is full or its stagger has not passed.
func (q *queue) holds(pool, account string) string {
	if pool == "" {
		return ""
	}
	cfg := q.config(pool)
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.d.clock.Now()
	if why := q.accountHeld(account, now); why != "" {
		return why
	}
	if cfg.MaxRunning == 0 && cfg.Stagger.Duration == 0 {
		return ""
	}
	return q.blocked(pool, cfg, q.running(pool), false, now)
}

// accountHeld says until when account's quota holds it, "" when it does
// not.
func (q *queue) accountHeld(account string, now time.Time) string {
	if p := q.pools[account]; account != "" && p != nil && p.limitedUntil.After(now) {
		return fmt.Sprintf("account %s is limited until %s", account, p.limitedUntil.Local().Format(time.TimeOnly))
	}
	return ""
}

// resumes reports whether a queued session goes on after its account's
// limit: it waited for the reset (a continuation, or a session queued
// before the reset passed), so that it starts at least resumeSpacing after
// the last such session of the account, in whatever pool (resumes).
func (q *queue) resumes(place *ipc.QueuePlace) bool {
	a := q.pools[place.Account]
	if place.Account == "" || a == nil || a.limitedUntil.IsZero() {
		return false
	}
	return place.Reason == ipc.QueuedForLimit || place.Since.Before(a.limitedUntil)
}

// running counts the sessions of pool that run (or start).
func (q *queue) running(pool string) int {
	n := 0
	for _, s := range q.d.reg.Live("") {
		if rec := s.Snapshot(); rec.Pool == pool && ipc.Running(rec.State) {
			n++
		}
	}
	return n
}

// blocked says what keeps a session of pool from starting now, "" for
// nothing; resume is a continuation after a limit.
func (q *queue) blocked(pool string, cfg config.Pool, running int, resume bool, now time.Time) string {
	p := q.pools[pool]
	if cfg.MaxRunning > 0 && running >= cfg.MaxRunning {
		return fmt.Sprintf("pool %s is full (%d of max_running %d)", pool, running, cfg.MaxRunning)
	}
	gap := cfg.Stagger.Duration
	if resume {
		gap = max(gap, resumeSpacing)
	}
	if p != nil && gap > 0 && now.Sub(p.lastStart) < gap {
		return fmt.Sprintf("pool %s staggers its starts (%s apart)", pool, gap)
	}
	return ""
}

// ordered sorts the queue: priority, then interactive first, then arrival.
func (q *queue) ordered() {
	slices.SortStableFunc(q.waiting, func(a, b *queuedSession) int {
		pa, pb := a.s.Spec().Priority, b.s.Spec().Priority
		switch {
		case pa != pb:
			return pb - pa
		case a.interactive != b.interactive:
			if a.interactive {
				return -1
			}
			return 1
		}
		return int(a.seq - b.seq)
	})
}

// pass starts every queued session that may start now, in order, and sets
// the timer for the next moment one may.
func (q *queue) pass() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.d.clock.Now()
	q.ordered()
	runningOf := map[string]int{}
	heldPools := map[string]string{}
	var next time.Time
	soon := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	kept := q.waiting[:0]
	for _, w := range q.waiting {
		rec := w.s.Snapshot()
		if rec.State != ipc.StateQueued {
			continue // stopped meanwhile
		}
		place := rec.Queue
		if place == nil {
			place = &ipc.QueuePlace{}
		}
		if why, cancel := q.after(place); why != "" {
			if cancel {
				go func() { _ = w.s.Cancel(context.Background(), why) }()
				continue
			}
			w.why = why
			kept = append(kept, w)
			continue
		}
		if place.NotBefore.After(now) {
			w.why = "until " + place.NotBefore.Local().Format(time.TimeOnly)
			soon(place.NotBefore)
			kept = append(kept, w)
			continue
		}
		if why := q.accountHeld(place.Account, now); why != "" {
			w.why = why
			soon(q.pools[place.Account].limitedUntil)
			kept = append(kept, w)
			continue
		}
		resume := q.resumes(place)
		if resume {
			if a := q.pools[place.Account]; now.Sub(a.lastResume) < resumeSpacing {
				w.why = fmt.Sprintf("account %s goes on after its limit's reset one session at a time, %s apart", place.Account, resumeSpacing)
				soon(a.lastResume.Add(resumeSpacing))
				kept = append(kept, w)
				continue
			}
		}
		pool := rec.Pool
		if why, held := heldPools[pool]; held && pool != "" {
			w.why = why
			kept = append(kept, w)
			continue
		}
		if pool != "" {
			if _, ok := runningOf[pool]; !ok {
				runningOf[pool] = q.running(pool)
			}
			cfg := q.config(pool)
			if why := q.blocked(pool, cfg, runningOf[pool], place.Reason == ipc.QueuedForLimit, now); why != "" {
				heldPools[pool], w.why = why, why
				if p := q.pools[pool]; p != nil {
					gap := cfg.Stagger.Duration
					if place.Reason == ipc.QueuedForLimit {
						gap = max(gap, resumeSpacing)
					}
					soon(p.lastStart.Add(gap))
				}
				kept = append(kept, w)
				continue
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := w.s.Dequeue(ctx)
		cancel()
		if err != nil {
			q.d.log.Debug("a queued session did not start", zap.String("session", w.s.ID()), zap.Error(err))
			continue
		}
		if pool != "" {
			q.pool(pool).lastStart = now
			runningOf[pool]++
		}
		if resume {
			q.pools[place.Account].lastResume = now
		}
		q.d.log.Info("queued session started", zap.String("session", w.s.ID()), zap.String("pool", pool),
			zap.Duration("waited", now.Sub(place.Since).Round(time.Millisecond)))
	}
	clear(q.waiting[len(kept):])
	q.waiting = kept
	q.arm(next)
}

// after says what keeps a session that starts after another waiting, and
// whether it can never start (the other ended otherwise than it waits for).
func (q *queue) after(place *ipc.QueuePlace) (why string, cancel bool) {
	if place.After == "" {
		return "", false
	}
	dep := q.d.reg.Get(place.After)
	if dep == nil {
		return fmt.Sprintf("session %s it was to start after is gone", place.After), true
	}
	rec := dep.Snapshot()
	switch {
	case ipc.Live(rec.State):
		return "after " + place.After, false
	case place.AfterAny || rec.State == ipc.StateEnded && rec.EndReason == ipc.EndComplete:
		return "", false
	}
	what := rec.EndReason
	if rec.State == ipc.StateFailed {
		what = "failed to start"
	}
	return fmt.Sprintf("session %s it was to start after ended %s, not complete (--after-any starts after any end)", place.After, what), true
}

// arm sets the timer for the next pass, if one is due.
func (q *queue) arm(at time.Time) {
	if q.timer != nil && q.timAt.Equal(at) {
		return
	}
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	if at.IsZero() {
		return
	}
	q.timAt = at
	q.timer = q.d.clock.AfterFunc(at.Sub(q.d.clock.Now()), q.kick)
}

// places numbers the queued sessions in the order they will start, with
// what holds each.
func (q *queue) places() map[string]ipc.QueuePlace {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ordered()
	out := make(map[string]ipc.QueuePlace, len(q.waiting))
	n := 0
	for _, w := range q.waiting {
		rec := w.s.Snapshot()
		if rec.State != ipc.StateQueued || rec.Queue == nil {
			continue
		}
		n++
		p := *rec.Queue
		p.Place = n
		if w.why != "" {
			p.Why = w.why
		}
		out[rec.ID] = p
	}
	return out
}

// poolStates lists the pools that are configured, limited or in use.
func (q *queue) poolStates() []ipc.Pool {
	names := map[string]bool{}
	for name := range q.d.cfg.Pools {
		names[name] = true
	}
	counts := map[string][2]int{}
	for _, s := range q.d.reg.Live("") {
		rec := s.Snapshot()
		if rec.Pool == "" {
			continue
		}
		names[rec.Pool] = true
		c := counts[rec.Pool]
		if rec.State == ipc.StateQueued {
			c[1]++
		} else {
			c[0]++
		}
		counts[rec.Pool] = c
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.d.clock.Now()
	for name, p := range q.pools {
		if p.limitedUntil.After(now) {
			names[name] = true
		}
	}
	out := make([]ipc.Pool, 0, len(names))
	for name := range names {
		cfg := q.config(name)
		p := ipc.Pool{Name: name, MaxRunning: cfg.MaxRunning, StaggerMS: cfg.Stagger.Milliseconds(), Running: counts[name][0], Queued: counts[name][1]}
		if st := q.pools[name]; st != nil && st.limitedUntil.After(now) {
			p.LimitedUntil = st.limitedUntil
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b ipc.Pool) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// ListQueue implements ipc.Queue.
func (d *Service) ListQueue(ctx context.Context, c ipc.Caller) (*ipc.QueueListing, error) {
	places := d.queue.places()
	out := &ipc.QueueListing{Pools: d.queue.poolStates(), Queued: []ipc.SessionRow{}}
	for _, s := range d.reg.Live("") {
		p, ok := places[s.ID()]
		if !ok || !registry.Visible(c, s) {
			continue
		}
		rec := s.Snapshot()
		rec.Queue = &p
		out.Queued = append(out.Queued, rec.Row())
	}
	slices.SortFunc(out.Queued, func(a, b ipc.SessionRow) int { return a.Queue.Place - b.Queue.Place })
	return out, nil
}
