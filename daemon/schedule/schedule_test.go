package schedule

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestScheduleRunsUntilCancelled: a job runs at each time its schedule
// names, and no more once cancelled.
func TestScheduleRunsUntilCancelled(t *testing.T) {
	t.Parallel()
	s := New(zap.NewNop())
	t.Cleanup(s.Stop)
	var n atomic.Int32
	ticked := make(chan struct{}, 10)
	cancel, err := s.Schedule("@every 1s", func() { n.Add(1); ticked <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case <-ticked:
		case <-time.After(10 * time.Second):
			t.Fatalf("tick %d did not come", i+1)
		}
	}
	cancel()
	cancel() // twice is once
	if got := s.armed(); got != 0 {
		t.Errorf("%d schedules armed after the cancel", got)
	}
	at := n.Load()
	time.Sleep(1500 * time.Millisecond)
	if got := n.Load(); got != at {
		t.Errorf("the job ran %d times after its cancel", got-at)
	}
}

// TestScheduleManyAtOnce: a thousand schedules armed and cancelled from
// many goroutines leave none behind, and their jobs never run in between
// (the next time is an hour away).
func TestScheduleManyAtOnce(t *testing.T) {
	t.Parallel()
	s := New(zap.NewNop())
	t.Cleanup(s.Stop)
	var ran atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var cancels []func()
			for range 125 {
				c, err := s.Schedule("0 * * * *", func() { ran.Add(1) })
				if err != nil {
					t.Error(err)
					return
				}
				cancels = append(cancels, c)
			}
			for _, c := range cancels {
				c()
			}
		}()
	}
	wg.Wait()
	if got := s.armed(); got != 0 {
		t.Errorf("%d schedules armed after every cancel", got)
	}
	if _, err := s.Schedule("every hour", func() {}); err == nil {
		t.Error("a schedule that is not one was taken")
	}
}

// TestSchedulePanicIsLogged: a job that panics is logged and runs again
// at its next time; Stop waits for a job that runs and none runs after.
func TestSchedulePanicIsLogged(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.ErrorLevel)
	s := New(zap.New(core))
	var n atomic.Int32
	release := make(chan struct{})
	second := make(chan struct{})
	if _, err := s.Schedule("@every 1s", func() {
		switch n.Add(1) {
		case 1:
			panic("boom")
		case 2:
			close(second)
			<-release
		}
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not run again after its panic")
	}
	if logs.FilterMessage("checkpoint schedule: the job panicked").Len() != 1 {
		t.Errorf("the panic is not logged once: %v", logs.All())
	}
	stopped := make(chan struct{})
	go func() { s.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a job runs")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-stopped
	at := n.Load()
	time.Sleep(1500 * time.Millisecond)
	if got := n.Load(); got != at {
		t.Errorf("a job ran after Stop")
	}
	if c, err := s.Schedule("@every 1s", func() { n.Add(1) }); err != nil || s.armed() != 0 {
		t.Errorf("a schedule armed after Stop (%v)", err)
	} else {
		c()
	}
}

// BenchmarkArmAndCancel1000 is a thousand sessions' schedules armed, then
// cancelled: a batch start and a stop --all.
func BenchmarkArmAndCancel1000(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s := New(zap.NewNop())
		cancels := make([]func(), 0, 1000)
		for range 1000 {
			c, err := s.Schedule("*/15 * * * *", func() {})
			if err != nil {
				b.Fatal(err)
			}
			cancels = append(cancels, c)
		}
		for _, c := range cancels {
			c()
		}
		s.Stop()
	}
}
