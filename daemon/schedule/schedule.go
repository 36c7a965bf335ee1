// Package schedule runs the sessions' checkpoint schedules on one cron, with
// panics recovered (cron recovers none unless told).
package schedule

import (
	"github.com/robfig/cron/v3"
	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config/configfile"
)

// Scheduler is the cron of every session's checkpoint schedule.
type Scheduler struct {
	cron *cron.Cron
	log  cronLogger
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
	return func() { s.cron.Remove(id) }, nil
}

// Stop stops the scheduler and waits for jobs that run.
func (s *Scheduler) Stop() { <-s.cron.Stop().Done() }

// cronLogger adapts zap to cron's logger.
type cronLogger struct{ log *zap.Logger }

func (l cronLogger) Info(msg string, kv ...any) {
	l.log.Debug(msg, zap.Any("details", kv))
}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error(msg, zap.Error(err), zap.Any("details", kv))
}
