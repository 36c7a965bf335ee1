package daemon

import (
	"runtime"
	"sync"
	"time"

	"github.com/sessiond/sessiond/daemon/session"
	"github.com/sessiond/sessiond/ipc"
)

// usageMeter turns the CPU time of sessions' trees into a rate: the
// difference since the previous sample of each session, or, the first
// time, the average since it started.
type usageMeter struct {
	mu   sync.Mutex
	last map[string]usageSample
}

type usageSample struct {
	cpu time.Duration
	at  time.Time
}

func newUsageMeter() *usageMeter { return &usageMeter{last: map[string]usageSample{}} }

// fill measures the live sessions among recs (in parallel: each is a few
// reads of /proc) and sets their Usage.
func (m *usageMeter) fill(sessions map[string]*session.Session, recs []ipc.Session) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if s := sessions[recs[i].ID]; s != nil {
					recs[i].Usage = m.measure(s)
				}
			}
		}()
	}
	for i := range recs {
		if ipc.Live(recs[i].State) && recs[i].PID > 0 {
			work <- i
		}
	}
	close(work)
	wg.Wait()
	m.forget(sessions)
}

func (m *usageMeter) measure(s *session.Session) *ipc.Usage {
	u := s.Usage()
	now := time.Now()
	m.mu.Lock()
	prev, ok := m.last[s.ID()]
	m.last[s.ID()] = usageSample{u.CPU, now}
	m.mu.Unlock()
	since, used := now.Sub(s.StartedAt()), u.CPU
	if ok && now.Sub(prev.at) > 0 && u.CPU >= prev.cpu {
		since, used = now.Sub(prev.at), u.CPU-prev.cpu
	}
	pct := 0.0
	if since > 0 {
		pct = float64(used) / float64(since) * 100
	}
	return &ipc.Usage{CPUPercent: pct, RSSBytes: u.RSS, Procs: u.Procs}
}

// forget drops the samples of sessions no longer listed as live.
func (m *usageMeter) forget(live map[string]*session.Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.last {
		if _, ok := live[id]; !ok {
			delete(m.last, id)
		}
	}
}
