package notify

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/config"
)

// benchRules are ten daemon rules of the kinds a config holds.
func benchRules(url string) []config.NotifyRule {
	var rules []config.NotifyRule
	for i := range 10 {
		rules = append(rules, config.NotifyRule{
			Name: fmt.Sprint("r", i), On: []string{"ended:error", "crashed", "failed"},
			Project: "/home/*/src/**", SessionName: "nightly-*", Webhook: url,
		})
	}
	return rules
}

// BenchmarkPublish measures what a session pays per event: matching it
// against ten rules (none matches), or repeating a spell (de-duplicated).
func BenchmarkPublish(b *testing.B) {
	n, err := New(benchRules("https://hooks.example.com/x"), Options{Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close(context.Background())
	b.Run("no-match", func(b *testing.B) {
		ev := Event{Type: config.NotifyEnded, EndReason: "complete", SessionID: "s1", Name: "nightly-1", ProjectDir: "/home/dev/src/api"}
		b.ReportAllocs()
		for b.Loop() {
			n.Publish(ev, nil)
		}
	})
	b.Run("filtered-out", func(b *testing.B) {
		ev := Event{Type: config.NotifyEnded, EndReason: "error", SessionID: "s1", Name: "nightly-1", ProjectDir: "/srv/api"}
		b.ReportAllocs()
		for b.Loop() {
			n.Publish(ev, nil)
		}
	})
	b.Run("repeated-spell", func(b *testing.B) {
		ev := Event{Type: config.NotifyAgentWaiting, SessionID: "s1", Spell: "2025-01-01T12:00:00Z"}
		b.ReportAllocs()
		for b.Loop() {
			n.Publish(ev, nil)
		}
	})
}

// BenchmarkPublishDrop measures Publish when every matching rule's queue is
// full: the cost of a flood.
func BenchmarkPublishDrop(b *testing.B) {
	srv := newHookServer(b, 0)
	rules := benchRules(srv.URL)
	n, err := New(rules, Options{Logger: zap.NewNop(), QueueSize: 1})
	if err != nil {
		b.Fatal(err)
	}
	ev := Event{Type: config.NotifyEnded, EndReason: "error", SessionID: "s1", Name: "nightly-1", ProjectDir: "/home/dev/src/api"}
	for range 3 {
		n.Publish(ev, nil)
	}
	b.ReportAllocs()
	for b.Loop() {
		n.Publish(ev, nil)
	}
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = n.Close(ctx)
}
