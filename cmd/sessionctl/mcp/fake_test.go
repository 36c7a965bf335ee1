package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// fakeDaemon stands in for sessiond behind the Daemon interface: the daemon
// side is tested with the daemon; here only what the server makes of it
// matters.
type fakeDaemon struct {
	mu sync.Mutex

	now          time.Time
	deadline     time.Time
	warned       bool
	state        string // "": running or warned
	extendCap    time.Duration
	extendUsed   time.Duration
	remainingErr error
	budget       Budget

	reports  []Report
	blockers []Blocker
	nextID   int

	checkpoint Checkpoint
	// blockCheckpoint makes Checkpoint wait for its context to end and
	// send the context's error on checkpointDone.
	blockCheckpoint bool
	checkpointStart chan struct{}
	checkpointDone  chan error

	briefing Briefing

	sessions []string
}

func newFakeDaemon() *fakeDaemon {
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	return &fakeDaemon{
		now:             now,
		deadline:        now.Add(90 * time.Minute),
		nextID:          1,
		checkpoint:      Checkpoint{ID: "5d41402abc4b2a76b9719d911017c592", FilesChanged: 3, Message: "sessiond checkpoint"},
		checkpointStart: make(chan struct{}, 1),
		checkpointDone:  make(chan error, 1),
	}
}

func (f *fakeDaemon) seen(session string) {
	f.sessions = append(f.sessions, session)
}

func (f *fakeDaemon) Remaining(ctx context.Context, session string) (Remaining, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen(session)
	if f.remainingErr != nil {
		return Remaining{}, f.remainingErr
	}
	state := f.state
	if state == "" {
		state = map[bool]string{false: "running", true: "warned"}[f.warned]
	}
	return Remaining{
		State: state, Deadline: f.deadline,
		WarnAt: f.deadline.Add(-30 * time.Minute), Left: f.deadline.Sub(f.now), Warned: f.warned,
		ExtendCap: f.extendCap, ExtendLeft: f.extendCap - f.extendUsed, Budget: f.budget,
	}, nil
}

func (f *fakeDaemon) Report(ctx context.Context, session string, r Report) (ReportResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen(session)
	f.reports = append(f.reports, r)
	for _, b := range r.BlockersAdd {
		b.ID = f.nextID
		f.nextID++
		f.blockers = append(f.blockers, b)
	}
	for _, id := range r.BlockersResolve {
		found := false
		for i, b := range f.blockers {
			if b.ID == id {
				f.blockers = append(f.blockers[:i], f.blockers[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			return ReportResult{}, fmt.Errorf("no open blocker %d", id)
		}
	}
	return ReportResult{Blockers: append([]Blocker(nil), f.blockers...)}, nil
}

func (f *fakeDaemon) Checkpoint(ctx context.Context, session string) (Checkpoint, error) {
	f.mu.Lock()
	f.seen(session)
	block, c := f.blockCheckpoint, f.checkpoint
	f.mu.Unlock()
	if block {
		f.checkpointStart <- struct{}{}
		<-ctx.Done()
		f.checkpointDone <- ctx.Err()
		return Checkpoint{}, ctx.Err()
	}
	return c, nil
}

func (f *fakeDaemon) Briefing(ctx context.Context, session string) (Briefing, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen(session)
	return f.briefing, nil
}

func (f *fakeDaemon) Extend(ctx context.Context, session string, by time.Duration) (Extension, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen(session)
	if left := f.extendCap - f.extendUsed; by > left {
		return Extension{}, fmt.Errorf("%w: %s asked, %s of agent_may_extend = %q left", ErrExtendRefused, by, left, f.extendCap)
	}
	f.extendUsed += by
	f.deadline = f.deadline.Add(by)
	return Extension{Deadline: f.deadline, Left: f.deadline.Sub(f.now), ExtendLeft: f.extendCap - f.extendUsed}, nil
}

var errUnreachable = errors.New("sessiond is not reachable at /run/user/1000/sessiond.sock")
