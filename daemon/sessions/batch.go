package sessions

import (
	"context"
	"sync"

	"github.com/sessiond/sessiond/daemon/registry"
	"github.com/sessiond/sessiond/ipc"
)

// startParallel bounds the starts of a batch that run at once: enough for
// their record and file writes to share the disk's syncs, few enough that
// their git and process spawns do not crowd the daemon's CPU.
const startParallel = 32

// StartSessions implements ipc.Sessions: each request is started as
// StartSession would, startParallel at a time; one that fails does not stop
// the others.
func (d *Service) StartSessions(ctx context.Context, c ipc.Caller, reqs []ipc.StartRequest) ([]ipc.StartResult, error) {
	if d.closing.Load() {
		return nil, ipc.Unavailable("sessiond is shutting down")
	}
	if max := d.cfg.MaxBatch; max > 0 && len(reqs) > max && !d.trusted(c.UID) {
		return nil, ipc.BadRequest("max_batch (%d): a batch of %d sessions is more than the daemon takes from one request; split it", max, len(reqs))
	}
	if err := d.allowStarts(c, len(reqs)); err != nil {
		return nil, err
	}
	for i := range reqs {
		if reqs[i].EnvironOfFirst {
			reqs[i].Environ, reqs[i].EnvironOfFirst = reqs[0].Environ, false
		}
	}
	out := make([]ipc.StartResult, len(reqs))
	sem := make(chan struct{}, startParallel)
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			resp, err := d.startSession(ctx, c, req)
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
func (d *Service) StopSessions(ctx context.Context, c ipc.Caller, req ipc.StopBatchRequest) ([]ipc.StopResult, error) {
	ids := req.IDs
	switch {
	case req.All && len(ids) > 0:
		return nil, ipc.BadRequest("give ids or all, not both")
	case req.All:
		for _, s := range d.reg.Live("") {
			if registry.Visible(c, s) {
				ids = append(ids, s.ID())
			}
		}
	case len(ids) == 0:
		return nil, ipc.BadRequest("ids: which sessions to stop (or all)")
	case len(ids) > ipc.MaxBatch:
		return nil, ipc.BadRequest("a batch of %d sessions: at most %d", len(ids), ipc.MaxBatch)
	}
	if _, err := parseGrace(req.Grace); err != nil {
		return nil, err
	}
	brief := false
	switch req.View {
	case "":
	case ipc.StopViewBrief:
		brief = true
	default:
		return nil, ipc.BadRequest("view %q: want %q or none", req.View, ipc.StopViewBrief)
	}
	if req.All {
		// And the chains between a session and its successor.
		for _, id := range d.restarts.PendingIDs() {
			if s := d.reg.Get(id); s != nil && registry.Visible(c, s) {
				d.restarts.Cancel(id)
			}
		}
	}
	defer d.relax(len(ids))()
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
			out[i].ID = rec.ID
			if brief {
				out[i].Brief = ipc.BriefOf(rec)
			} else {
				out[i].Session = rec
			}
		}()
	}
	wg.Wait()
	return out, nil
}
