// Package schedule runs the sessions' checkpoint schedules on one cron, with
// panics recovered (cron recovers none unless told).
package schedule

import (
	"sync"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config/configfile"
)

// Scheduler is the cron of every session's checkpoint schedule.
type Scheduler struct {
	cron *cron.Cron
	log  cronLogger

	// removals are the schedules cancelled and not yet taken off the
	// cron, which takes one at a time on its own goroutine; removing says
	// a goroutine takes them off.
	mu       sync.Mutex
	removals []cron.EntryID
	removing bool
}

// New starts a scheduler.
func New(log *zap.Logger) *Scheduler {
	l := cronLogger{log}
	c := cron.New(cron.WithParser(configfile.CronParser), cron.WithChain(cron.Recover(l)), cron.WithLogger(l))
	c.Start()
	return &Scheduler{cron: c, log: l}
}

// Schedule implements session.Scheduler.
func (s *Scheduler) Schedule(spec string, job func()) (cancel func(), err error) {
	sched, err := configfile.ParseSchedule(spec)
	if err != nil {
		return nil, err
	}
	id := s.cron.Schedule(sched, cron.FuncJob(job))
	return func() { s.remove(id) }, nil
}

// remove takes a schedule off the cron in the background: a cancel does
// not wait for the cron's goroutine (a thousand sessions ending at once
// waited for each other there). A tick that comes meanwhile reaches a
// session that ignores it.
func (s *Scheduler) remove(id cron.EntryID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removals = append(s.removals, id)
	if s.removing {
		return
	}
	s.removing = true
	go func() {
		for {
			s.mu.Lock()
			ids := s.removals
			s.removals = nil
			if len(ids) == 0 {
				s.removing = false
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			for _, id := range ids {
				s.cron.Remove(id)
			}
		}
	}()
}

// Stop stops the scheduler and waits for jobs that run.
func (s *Scheduler) Stop() { <-s.cron.Stop().Done() }

// cronLogger adapts zap to cron's logger.
type cronLogger struct{ log *zap.Logger }

func (l cronLogger) Info(msg string, kv ...any) {
	if ce := l.log.Check(zap.DebugLevel, msg); ce != nil {
		ce.Write(zap.Any("details", kv))
	}
}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error(msg, zap.Error(err), zap.Any("details", kv))
}
