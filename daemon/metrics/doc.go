// Package metrics is the daemon's opt-in Prometheus metrics (metrics =
// true in the daemon config): what sessions are doing now, counted from
// the event bus as it happens (starts, ends by reason, restarts,
// warnings, how late warnings and deadlines fired, how long handoffs took
// to land), checkpoint durations and failures, watcher events and
// overflows, and API requests by route and status. It is served as GET
// /v1/metrics in the Prometheus text format.
//
// Labels carry no session ids, names or paths: what a scrape shows of a
// multi-user daemon is counts, never whose sessions they are.
package metrics
