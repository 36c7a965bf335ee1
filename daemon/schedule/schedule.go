// Package schedule runs the sessions' checkpoint schedules, each on a
// timer of its own, with panics recovered.
//
// A schedule is armed, re-armed and cancelled in O(log n) of the timers
// the runtime holds: a thousand sessions starting or ending together do
// not each go through one goroutine that sorts every schedule again (as
// a cron's single loop does).
package schedule

import (
	"fmt"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config/configfile"
)

// Scheduler runs every session's checkpoint schedule.
type Scheduler struct {
	log *zap.Logger

	mu      sync.Mutex
	entries map[*entry]struct{}
	stopped bool
	running sync.WaitGroup
	// parsed are the schedules parsed so far, by spec: the sessions
	// mostly share a few (a schedule is read, never changed).
	parsed map[string]cron.Schedule
}

// maxParsed bounds the schedules kept parsed.
const maxParsed = 64

// entry is one schedule: its job runs at each time the schedule names,
// from its timer's goroutine.
type entry struct {
	s     *Scheduler
	sched cron.Schedule
	job   func()
	// Guarded by s.mu: when the job is next due, and the timer that
	// wakes it then (nil once cancelled).
	next  time.Time
	timer *time.Timer
}

// New returns a scheduler.
func New(log *zap.Logger) *Scheduler {
	return &Scheduler{log: log, entries: map[*entry]struct{}{}, parsed: map[string]cron.Schedule{}}
}

// Schedule implements session.Scheduler: job runs at every time spec
// names (cron syntax, or "@every D"), until cancel.
func (s *Scheduler) Schedule(spec string, job func()) (cancel func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sched := s.parsed[spec]
	if sched == nil {
		if sched, err = configfile.ParseSchedule(spec); err != nil {
			return nil, err
		}
		if len(s.parsed) < maxParsed {
			s.parsed[spec] = sched
		}
	}
	e := &entry{s: s, sched: sched, job: job}
	if s.stopped {
		return func() {}, nil
	}
	now := time.Now()
	e.next = sched.Next(now)
	if e.next.IsZero() {
		return func() {}, nil // a time that never comes
	}
	e.timer = time.AfterFunc(e.next.Sub(now), e.fire)
	s.entries[e] = struct{}{}
	return e.cancel, nil
}

// cancel takes the schedule away; a job already running finishes.
func (e *entry) cancel() {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
		delete(e.s.entries, e)
	}
}

// fire runs the job if it is due (a timer may wake before the wall clock
// says so), then arms the timer for the next time.
func (e *entry) fire() {
	s := e.s
	s.mu.Lock()
	if e.timer == nil || s.stopped {
		s.mu.Unlock()
		return
	}
	now := time.Now()
	due := !now.Before(e.next)
	if due {
		e.next = e.sched.Next(now)
	}
	if e.next.IsZero() {
		e.timer = nil
		delete(s.entries, e)
	} else {
		e.timer.Reset(e.next.Sub(now))
	}
	if due {
		s.running.Add(1)
	}
	s.mu.Unlock()
	if due {
		defer s.running.Done()
		e.run()
	}
}

// run runs the job; a panic is logged, not the daemon's end.
func (e *entry) run() {
	defer func() {
		if r := recover(); r != nil {
			e.s.log.Error("checkpoint schedule: the job panicked", zap.Error(fmt.Errorf("%v", r)), zap.Stack("stack"))
		}
	}()
	e.job()
}

// Stop cancels every schedule and waits for the jobs that run.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	s.stopped = true
	for e := range s.entries {
		e.timer.Stop()
		e.timer = nil
	}
	clear(s.entries)
	s.mu.Unlock()
	s.running.Wait()
}

// armed is how many schedules are armed.
func (s *Scheduler) armed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
