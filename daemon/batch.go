package daemon

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// startParallel bounds the starts of a batch that run at once: enough for
// their record and file writes to share the disk's syncs, few enough that
// their git and process spawns do not crowd the daemon's CPU.
const startParallel = 32

// StartSessions implements ipc.Sessions: each request is started as
// StartSession would, startParallel at a time; one that fails does not stop
// the others.
func (d *Daemon) StartSessions(ctx context.Context, c ipc.Caller, reqs []ipc.StartRequest) ([]ipc.StartResult, error) {
	out := make([]ipc.StartResult, len(reqs))
	sem := make(chan struct{}, startParallel)
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			resp, err := d.StartSession(ctx, c, req)
			if err != nil {
				out[i].Error = ipc.ErrorBodyOf(err)
				return
			}
			out[i].StartResponse = resp
		}()
	}
	wg.Wait()
	return out, nil
}

// StopSessions implements ipc.Sessions: every session named is stopped at
// once, so that their ends, and the syncs of their files, overlap.
func (d *Daemon) StopSessions(ctx context.Context, c ipc.Caller, req ipc.StopBatchRequest) ([]ipc.StopResult, error) {
	ids := req.IDs
	switch {
	case req.All && len(ids) > 0:
		return nil, ipc.BadRequest("give ids or all, not both")
	case req.All:
		for _, s := range d.reg.live("") {
			if visible(c, s) {
				ids = append(ids, s.ID())
			}
		}
	case len(ids) == 0:
		return nil, ipc.BadRequest("ids: which sessions to stop (or all)")
	case len(ids) > ipc.MaxBatch:
		return nil, ipc.BadRequest("a batch of %d sessions: at most %d", len(ids), ipc.MaxBatch)
	}
	out := make([]ipc.StopResult, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		out[i].ID = id
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, err := d.StopSession(ctx, c, id, ipc.StopRequest{Grace: req.Grace})
			if err != nil {
				out[i].Error = ipc.ErrorBodyOf(err)
				return
			}
			out[i].ID, out[i].Session = rec.ID, rec
		}()
	}
	wg.Wait()
	return out, nil
}

// settler hands back to the system, a moment after many sessions started
// or ended, the memory their starts and stops used on the way (requests,
// spawns, record and file writes): the Go runtime would otherwise keep it
// as room for a heap that an idle daemon does not need, and a daemon of
// 1000 idle sessions would hold half as much again as they use.
type settler struct {
	mu sync.Mutex
	n  int // starts and ends since the last settling
	t  *time.Timer
}

// settleAfter is how many starts and ends make a settling worthwhile;
// settleDelay lets the last answer be written first, and a run of them
// settles once, when it is over.
const (
	settleAfter = 64
	settleDelay = 2 * time.Second
)

// after counts n starts or ends.
func (s *settler) after(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += n
	if s.n < settleAfter {
		return
	}
	if s.t == nil {
		s.t = time.AfterFunc(settleDelay, s.settle)
		return
	}
	s.t.Reset(settleDelay)
}

func (s *settler) settle() {
	s.mu.Lock()
	s.n = 0
	s.mu.Unlock()
	// Twice: what the first collection finds in sync.Pools (the buffer
	// encoding/json kept from the burst's largest reply, a megabyte for a
	// thousand starts) it only sets aside, and the second frees.
	debug.FreeOSMemory()
	debug.FreeOSMemory()
}
