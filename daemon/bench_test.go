package daemon

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// BenchmarkStartStop100 starts 100 sessions in non-git projects (8
// requests at a time, as several clients would) and stops them all at
// once. It reports the time until all run and the time until every
// session has ended with its handoff on disk.
func BenchmarkStartStop100(b *testing.B) {
	h := start(b, nil)
	ctx := context.Background()
	var upMs, stopMs float64
	for range b.N {
		dirs := make([]string, 100)
		for i := range dirs {
			dirs[i] = project(b)
		}
		b.StartTimer()
		t0 := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		ids := make([]string, len(dirs))
		for i, dir := range dirs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				resp, err := h.client.Start(ctx, ipc.StartRequest{Dir: dir, Command: []string{"sleep", "10000"}})
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = resp.Session.ID
			}()
		}
		wg.Wait()
		upMs += float64(time.Since(t0).Milliseconds())
		t0 = time.Now()
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := h.client.Stop(ctx, id, ipc.StopRequest{}); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		stopMs += float64(time.Since(t0).Milliseconds())
		b.StopTimer()
		for _, dir := range dirs {
			if _, err := state.LoadHandoff(state.HandoffPath(dir)); err != nil {
				b.Fatalf("no handoff after stop: %v", err)
			}
		}
	}
	b.ReportMetric(upMs/float64(b.N), "ms/100-up")
	b.ReportMetric(stopMs/float64(b.N), "ms/100-stop")
}

// BenchmarkList100 measures GET /v1/sessions with 100 live sessions, as
// sessionctl ps sends it (round trip and decoding included).
func BenchmarkList100(b *testing.B) {
	h := start(b, nil)
	ctx := context.Background()
	for range 100 {
		if _, err := h.client.Start(ctx, ipc.StartRequest{Dir: project(b), Command: []string{"sleep", "10000"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		list, err := h.client.Sessions(ctx, ipc.ListOptions{})
		if err != nil || len(list) != 100 {
			b.Fatalf("list: %d, %v", len(list), err)
		}
	}
}

// BenchmarkListRows100 measures GET /v1/sessions?view=row&stats=1 with 100
// live sessions, as sessionctl ps sends it (round trip and decoding
// included; the allocations are the daemon's and the client's).
func BenchmarkListRows100(b *testing.B) {
	h := start(b, nil)
	ctx := context.Background()
	for range 100 {
		if _, err := h.client.Start(ctx, ipc.StartRequest{Dir: project(b), Command: []string{"sleep", "10000"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rows, err := h.client.SessionRows(ctx, ipc.ListOptions{Stats: true})
		if err != nil || len(rows) != 100 {
			b.Fatalf("list: %d, %v", len(rows), err)
		}
	}
}
