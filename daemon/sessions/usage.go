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
	// between its samples. A figure is never changed once shown; listings
	// share it.
	sampled time.Time
	shown   map[string]*ipc.Usage
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
	return &usageMeter{last: map[string]usageSample{}, shown: map[string]*ipc.Usage{}, clock: clock}
}

// fill measures the live sessions among the n listed (at gives the i-th
// and its state as listed), all from one reading of /proc, and sets their
// usage. Within usageMaxAge of the last reading, a listing of sessions it
// measured gets what it found, and costs no allocation: sessionctl ps
// asks for it every time it runs. all are the registry's sessions, whose
// samples are kept.
func (m *usageMeter) fill(all []*session.Session, n int, at func(i int) (s *session.Session, state string), set func(i int, u *ipc.Usage)) {
	measured := func(i int) (*session.Session, bool) {
		s, state := at(i)
		if s == nil || !ipc.Live(state) || !ipc.Live(s.State()) {
			return nil, false
		}
		_, ok := s.UsageQuery()
		return s, ok
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.sampled) < usageMaxAge && m.setShown(n, measured, set) {
		return
	}
	var (
		qs  []proc.UsageQuery
		idx []int
		// cg are the sessions measured by their cgroups instead (where
		// a memory controller accounts for them): no walk of /proc is
		// needed for them.
		cg []int
		ss = make([]*session.Session, n)
	)
	for i := range n {
		s, ok := measured(i)
		if !ok {
			continue
		}
		ss[i] = s
		if s.MeasuredByCgroup() {
			cg = append(cg, i)
			continue
		}
		if q, ok := s.UsageQuery(); ok {
			qs, idx = append(qs, q), append(idx, i)
		}
	}
	m.sampled = now
	clear(m.shown)
	var usages []proc.Usage
	if len(qs) > 0 {
		usages = proc.UsageOf(qs)
	}
	for _, i := range cg {
		cpu, mem, _, procs, _ := ss[i].Contained()
		u := proc.Usage{CPU: cpu, RSS: mem, Procs: procs}
		idx, usages = append(idx, i), append(usages, u)
	}
	us := make([]ipc.Usage, len(idx))
	for k, u := range usages {
		s := ss[idx[k]]
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
		m.shown[s.ID()] = &us[k]
		set(idx[k], &us[k])
	}
	live := liveByID(all)
	for id := range m.last {
		if _, ok := live[id]; !ok {
			delete(m.last, id)
		}
	}
}

// setShown sets what the last reading found for each session of the n
// listed that is to be measured, and reports whether it measured them all
// (if not, some were set and the others not).
func (m *usageMeter) setShown(n int, measured func(i int) (*session.Session, bool), set func(i int, u *ipc.Usage)) bool {
	for i := range n {
		if s, ok := measured(i); ok {
			u := m.shown[s.ID()]
			if u == nil {
				return false
			}
			set(i, u)
		}
	}
	return true
}
