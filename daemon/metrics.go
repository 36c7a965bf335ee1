package daemon

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/metrics"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/ipc/server"
)

// enableMetrics turns on the opt-in metrics (metrics = true): the bus
// shows them every event, checkpoints are timed, the API counts its
// requests. With metrics off none of this is in the way.
func (d *Daemon) enableMetrics(deps *session.Deps) {
	m := metrics.New(metrics.Sources{
		Version:  d.version,
		Since:    d.since,
		Sessions: d.reg.Records,
		ContainedMemory: func() (total int64, n int) {
			for _, s := range d.reg.All() {
				if _, mem, _, _, ok := s.Contained(); ok {
					total += mem
					n++
				}
			}
			return total, n
		},
		Session: func(id string) (ipc.Session, bool) {
			if s := d.reg.Get(id); s != nil {
				return s.Snapshot(), true
			}
			return ipc.Session{}, false
		},
		ProjectWatch: func() metrics.Counts {
			c := d.hub.Counters()
			return metrics.Counts{Events: c.Events, Overflows: c.Overflows}
		},
		Syncs: state.Syncs,
		LogWatch: func() metrics.Counts {
			c := d.watcher.Counters()
			return metrics.Counts{Events: c.Events, Overflows: c.Overflows}
		},
	})
	d.metrics = m
	deps.Checkpoints = timedCheckpoints{deps.Checkpoints, m}
}

// metricsHandler is what serves GET /v1/metrics; nil when metrics are off.
func (d *Daemon) metricsHandler() http.Handler {
	if d.metrics == nil {
		return nil
	}
	return d.metrics.Handler()
}

// requestObserver counts the API's requests, where metrics are on, and
// tells the settler of each (it settles once the API has been quiet).
func (d *Daemon) requestObserver() func(route string, status int) {
	if d.metrics == nil {
		return func(string, int) { d.settle.Served() }
	}
	return func(route string, status int) {
		d.metrics.Request(route, status)
		d.settle.Served()
	}
}

// listenMetrics serves the metrics on metrics_listen, if set.
func (d *Daemon) listenMetrics() error {
	if d.metrics == nil || d.cfg.MetricsListen == "" {
		return nil
	}
	ms, err := server.ListenMetrics(d.cfg.MetricsListen, d.metrics.Handler(), d.log)
	if err != nil {
		return err
	}
	d.metricsServer = ms
	go func() {
		if err := ms.Serve(); err != nil {
			d.log.Error("metrics listener stopped", zap.Error(err))
		}
	}()
	d.log.Info("serving metrics", zap.String("address", ms.Addr().String()))
	return nil
}

// stopMetrics stops the metrics listener, if there is one.
func (d *Daemon) stopMetrics(ctx context.Context) {
	if d.metricsServer == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = d.metricsServer.Shutdown(sctx)
}

// timedCheckpoints times every checkpoint a session takes.
type timedCheckpoints struct {
	next session.Checkpointer
	m    *metrics.Metrics
}

func (t timedCheckpoints) Take(ctx context.Context, req checkpoint.TakeRequest) (checkpoint.Result, error) {
	start := time.Now()
	res, err := t.next.Take(ctx, req)
	t.m.Checkpoint(time.Since(start), res.Skipped, err)
	return res, err
}
