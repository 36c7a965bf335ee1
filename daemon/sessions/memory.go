package sessions

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
)

// memoryPoll is how often the contained sessions' memory is looked at for
// OOM kills and pressure.
const memoryPoll = 5 * time.Second

// WatchMemory looks at every contained session's memory every memoryPoll
// until ctx ends: a session under pressure, or whose process the kernel
// killed for memory, is warned once for it (session.PollMemory).
func (d *Service) WatchMemory(ctx context.Context) {
	if !d.deps.Cgroups.Enabled() {
		return
	}
	t := time.NewTicker(memoryPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, s := range d.reg.All() {
			s.PollMemory()
		}
	}
}

// sweepCgroups removes the cgroups that belong to no live session: those
// of sessions whose start or end a daemon died in. Those of keep (sessions
// whose record cannot be read) stay, with what they hold.
func (d *Service) sweepCgroups(keep map[string]bool) {
	live := map[string]bool{}
	for id := range keep {
		live[id] = true
	}
	for _, s := range d.reg.All() {
		if ipc.Live(s.State()) {
			live[s.ID()] = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ids := d.deps.Cgroups.Sweep(ctx, func(id string) bool { return live[id] }); len(ids) > 0 {
		d.log.Info("removed the cgroups of sessions no longer live, with what they held", zap.Strings("sessions", ids))
	}
}
