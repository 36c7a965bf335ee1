package schedule

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// gate is a log core that holds the cron's goroutine at its first
// "removed" line until opened.
type gate struct {
	zapcore.LevelEnabler
	once sync.Once
	held chan struct{}
	open chan struct{}
}

func (g *gate) With([]zapcore.Field) zapcore.Core { return g }
func (g *gate) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, g)
}
func (g *gate) Write(e zapcore.Entry, _ []zapcore.Field) error {
	if e.Message == "removed" {
		g.once.Do(func() { close(g.held) })
		<-g.open
	}
	return nil
}
func (g *gate) Sync() error { return nil }

// TestCancelDoesNotWaitForTheCron: cancelling schedules returns while the
// cron's goroutine is busy (here held in its log), and the schedules are
// gone once it is free again.
func TestCancelDoesNotWaitForTheCron(t *testing.T) {
	g := &gate{LevelEnabler: zapcore.DebugLevel, held: make(chan struct{}), open: make(chan struct{})}
	s := New(zap.New(g))
	var opened sync.Once
	release := func() { opened.Do(func() { close(g.open) }) }
	t.Cleanup(func() { release(); s.Stop() })
	var cancels []func()
	for range 100 {
		cancel, err := s.Schedule("@every 1h", func() {})
		if err != nil {
			t.Fatal(err)
		}
		cancels = append(cancels, cancel)
	}
	cancels[0]()
	<-g.held // the cron's goroutine is held, removing the first
	done := make(chan struct{})
	go func() {
		for _, c := range cancels[1:] {
			c()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("cancels wait for the cron's goroutine")
	}
	release()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.cron.Entries()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d schedules left after their cancels", len(s.cron.Entries()))
		}
		time.Sleep(time.Millisecond)
	}
}
