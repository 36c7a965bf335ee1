package session

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

func TestTimelineNext(t *testing.T) {
	tests := []struct {
		name     string
		tl       timeline
		activity time.Time
		wantAt   time.Time
		want     due
	}{
		{"warning first", timeline{deadline: t0.Add(4 * time.Hour), warnAt: t0.Add(3*time.Hour + 30*time.Minute)}, t0,
			t0.Add(3*time.Hour + 30*time.Minute), dueWarn},
		{"after the warning, the deadline", timeline{deadline: t0.Add(4 * time.Hour), warnAt: t0.Add(3 * time.Hour), warned: true}, t0,
			t0.Add(4 * time.Hour), dueDeadline},
		{"no warn_before: the warning at the deadline comes first", timeline{deadline: t0.Add(time.Hour), warnAt: t0.Add(time.Hour)}, t0,
			t0.Add(time.Hour), dueWarn},
		{"idle before the warning", timeline{deadline: t0.Add(time.Hour), warnAt: t0.Add(50 * time.Minute), idle: 10 * time.Minute}, t0.Add(5 * time.Minute),
			t0.Add(15 * time.Minute), dueIdle},
		{"idle after the deadline does not come", timeline{deadline: t0.Add(time.Hour), warnAt: t0.Add(50 * time.Minute), warned: true, idle: 2 * time.Hour}, t0,
			t0.Add(time.Hour), dueDeadline},
		{"idle off", timeline{deadline: t0.Add(time.Hour), warnAt: t0.Add(50 * time.Minute), warned: true}, t0.Add(-time.Hour),
			t0.Add(time.Hour), dueDeadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, what := tt.tl.next(tt.activity)
			if !at.Equal(tt.wantAt) || what != tt.want {
				t.Errorf("next = %v %v, want %v %v", at, what, tt.wantAt, tt.want)
			}
		})
	}
}

func TestTimelineExtend(t *testing.T) {
	base := timeline{deadline: t0.Add(time.Hour), warnAt: t0.Add(50 * time.Minute), warnBefore: 10 * time.Minute}
	tests := []struct {
		name       string
		tl         timeline
		by         time.Duration
		now        time.Time
		wantWarnAt time.Time
		wantWarned bool
	}{
		{"before the warning", base, 30 * time.Minute, t0.Add(10 * time.Minute), t0.Add(80 * time.Minute), false},
		{"warned, the new warning ahead: warned again later", withWarned(base), 30 * time.Minute, t0.Add(55 * time.Minute), t0.Add(80 * time.Minute), false},
		{"warned, too little to leave the warning window", withWarned(base), 2 * time.Minute, t0.Add(55 * time.Minute), t0.Add(52 * time.Minute), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.tl.extend(tt.by, tt.now)
			if !got.deadline.Equal(tt.tl.deadline.Add(tt.by)) {
				t.Errorf("deadline = %v, want %v", got.deadline, tt.tl.deadline.Add(tt.by))
			}
			if !got.warnAt.Equal(tt.wantWarnAt) || got.warned != tt.wantWarned {
				t.Errorf("warn at %v warned %v, want %v %v", got.warnAt, got.warned, tt.wantWarnAt, tt.wantWarned)
			}
		})
	}
}

func withWarned(t timeline) timeline { t.warned = true; return t }

func TestTimelineIdleFor(t *testing.T) {
	tl := timeline{idle: time.Minute}
	if tl.idleFor(t0, t0.Add(59*time.Second)) {
		t.Error("idle after 59s of a 1m idle_timeout")
	}
	if !tl.idleFor(t0, t0.Add(time.Minute)) {
		t.Error("not idle after exactly idle_timeout")
	}
	if (timeline{}).idleFor(t0, t0.Add(24*time.Hour)) {
		t.Error("idle with idle_timeout off")
	}
}

func TestFakeClock(t *testing.T) {
	c := NewFakeClock(t0)
	a, b := c.NewTimer(time.Second), c.NewTimer(time.Minute)
	c.Advance(999 * time.Millisecond)
	select {
	case <-a.C():
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Millisecond)
	select {
	case at := <-a.C():
		if !at.Equal(t0.Add(time.Second)) {
			t.Errorf("fired at %v", at)
		}
	default:
		t.Fatal("did not fire when due")
	}
	if !b.Stop() || b.Stop() {
		t.Error("Stop of a pending timer: want true, then false")
	}
	c.Advance(time.Hour)
	select {
	case <-b.C():
		t.Error("a stopped timer fired")
	default:
	}
	if c.Pending() != 0 {
		t.Errorf("pending = %d, want 0", c.Pending())
	}
}
