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
	d.settle.after(len(reqs))
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
	d.settle.after(len(ids))
	return out, nil
}

// settler hands back to the system, a moment after a large batch, the
// memory the batch's starts or stops used on their way (their requests,
// spawns, record and file writes): the Go runtime would otherwise keep it
// as room for a heap that an idle daemon does not need, and a daemon of
// 1000 idle sessions would hold twice what they use.
type settler struct {
	mu sync.Mutex
	t  *time.Timer
}

// settleBatch is the smallest batch worth a settling; settleDelay lets the
// batch's answer be written first, and batches in a row settle once.
const (
	settleBatch = 64
	settleDelay = 2 * time.Second
)

func (s *settler) after(n int) {
	if n < settleBatch {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t == nil {
		s.t = time.AfterFunc(settleDelay, debug.FreeOSMemory)
		return
	}
	s.t.Reset(settleDelay)
}
