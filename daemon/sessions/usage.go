package sessions

import (
	"sync"
	"time"

	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// usageMeter turns the CPU time of sessions' trees into a rate: the
// difference since the previous sample of each session, or, the first
// time, the average since it started.
type usageMeter struct {
	mu   sync.Mutex
	last map[string]usageSample
	// sampled is when /proc was last read, and shown what it said per
	// session: a listing within usageMaxAge of it shows that, as top does
	// between its samples.
	sampled time.Time
	shown   map[string]ipc.Usage
	clock   session.Clock
}

// usageMaxAge is how old a usage figure a listing may show: a second, the
// finest resolution a CPU percentage means anything at.
const usageMaxAge = time.Second

type usageSample struct {
	cpu time.Duration
	at  time.Time
}

func newUsageMeter(clock session.Clock) *usageMeter {
	return &usageMeter{last: map[string]usageSample{}, shown: map[string]ipc.Usage{}, clock: clock}
}

// fill measures the live sessions among the n listed (at gives the id and
// state of the i-th), all from one reading of /proc, and sets their usage.
func (m *usageMeter) fill(sessions map[string]*session.Session, n int, at func(i int) (id, state string), set func(i int, u *ipc.Usage)) {
	var (
		qs  []proc.UsageQuery
		idx []int
		// cg are the sessions measured by their cgroups instead (where
		// a memory controller accounts for them): no walk of /proc is
		// needed for them.
		cg []int
	)
	ids := make([]string, n)
	for i := range n {
		id, state := at(i)
		ids[i] = id
		if s := sessions[id]; s != nil && ipc.Live(state) {
			if q, ok := s.UsageQuery(); ok {
				if s.MeasuredByCgroup() {
					cg = append(cg, i)
					continue
				}
				qs, idx = append(qs, q), append(idx, i)
			}
		}
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.sampled) < usageMaxAge {
		fresh := true
		for _, i := range append(idx, cg...) {
			if _, ok := m.shown[ids[i]]; !ok {
				fresh = false
				break
			}
		}
		if fresh {
			all := append(idx, cg...)
			us := make([]ipc.Usage, len(all))
			for k, i := range all {
				us[k] = m.shown[ids[i]]
				set(i, &us[k])
			}
			return
		}
	}
	m.sampled = now
	clear(m.shown)
	var usages []proc.Usage
	if len(qs) > 0 {
		usages = proc.UsageOf(qs)
	}
	for _, i := range cg {
		cpu, mem, _, procs, _ := sessions[ids[i]].Contained()
		u := proc.Usage{CPU: cpu, RSS: mem, Procs: procs}
		qs, idx, usages = append(qs, proc.UsageQuery{}), append(idx, i), append(usages, u)
	}
	us := make([]ipc.Usage, len(idx))
	for k, u := range usages {
		s := sessions[ids[idx[k]]]
		prev, ok := m.last[s.ID()]
		m.last[s.ID()] = usageSample{u.CPU, now}
		since, used := now.Sub(s.StartedAt()), u.CPU
		if ok && now.Sub(prev.at) > 0 && u.CPU >= prev.cpu {
			since, used = now.Sub(prev.at), u.CPU-prev.cpu
		}
		pct := 0.0
		if since > 0 {
			pct = float64(used) / float64(since) * 100
		}
		us[k] = ipc.Usage{CPUPercent: pct, RSSBytes: u.RSS, Procs: u.Procs}
		m.shown[s.ID()] = us[k]
		set(idx[k], &us[k])
	}
	for id := range m.last {
		if _, ok := sessions[id]; !ok {
			delete(m.last, id)
		}
	}
}
