package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sessiond/sessiond/ipc"
)

var (
	sessionsDesc = prometheus.NewDesc("sessiond_sessions", "Sessions the daemon holds, by state.", []string{"state"}, nil)
	agentsDesc   = prometheus.NewDesc("sessiond_agent_sessions", "Live sessions whose agent is known, by the agent's state.", []string{"state"}, nil)
	watchEvents  = prometheus.NewDesc("sessiond_watch_events_total", "Inotify events read, by watcher: projects (the project trees) or logs (the session logs).", []string{"watcher"}, nil)
	watchLost    = prometheus.NewDesc("sessiond_watch_overflows_total", "Inotify queue overflows (events lost, rescans made), by watcher.", []string{"watcher"}, nil)
)

var (
	sessionStates = []string{ipc.StateStarting, ipc.StateRunning, ipc.StateWarned, ipc.StateStopping, ipc.StateEnded, ipc.StateFailed}
	agentStates   = []string{ipc.AgentWorking, ipc.AgentWaiting, ipc.AgentIdle, ipc.AgentUnknown}
)

// sessionCollector counts the sessions by state when scraped: the
// registry's snapshots are the truth, nothing is kept in step with them.
type sessionCollector struct{ src Sources }

func (c sessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- agentsDesc
}

func (c sessionCollector) Collect(ch chan<- prometheus.Metric) {
	states := map[string]int{}
	agents := map[string]int{}
	if c.src.Sessions != nil {
		for _, s := range c.src.Sessions() {
			states[s.State]++
			if s.Agent != nil && ipc.Live(s.State) {
				st := s.Agent.State
				if st == "" {
					st = ipc.AgentUnknown
				}
				agents[st]++
			}
		}
	}
	for _, s := range sessionStates {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(states[s]), s)
	}
	for _, s := range agentStates {
		ch <- prometheus.MustNewConstMetric(agentsDesc, prometheus.GaugeValue, float64(agents[s]), s)
	}
}

// watchCollector reads the watchers' counters when scraped.
type watchCollector struct{ src Sources }

func (c watchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- watchEvents
	ch <- watchLost
}

func (c watchCollector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range []struct {
		name  string
		count func() Counts
	}{{"projects", c.src.ProjectWatch}, {"logs", c.src.LogWatch}} {
		var n Counts
		if w.count != nil {
			n = w.count()
		}
		ch <- prometheus.MustNewConstMetric(watchEvents, prometheus.CounterValue, float64(n.Events), w.name)
		ch <- prometheus.MustNewConstMetric(watchLost, prometheus.CounterValue, float64(n.Overflows), w.name)
	}
}
