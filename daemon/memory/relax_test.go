package memory

import (
	"math"
	"runtime/debug"
	"testing"
)

// collector returns the collector's target and memory limit as they are.
func collector() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// setCollector sets the collector's target and memory limit, and puts
// back those of before once the test is over.
func setCollector(t *testing.T, percent int, limit int64) {
	t.Helper()
	p, l := collector()
	t.Cleanup(func() { debug.SetGCPercent(p); debug.SetMemoryLimit(l) })
	debug.SetGCPercent(percent)
	debug.SetMemoryLimit(limit)
}

// TestRelaxSmallRunChangesNothing: fewer than After ends are no run.
func TestRelaxSmallRunChangesNothing(t *testing.T) {
	setCollector(t, 50, math.MaxInt64)
	times := RelaxedTimes()
	restore := Relax(After - 1)
	if p, l := collector(); p != 50 || l != math.MaxInt64 {
		t.Fatalf("during a run of %d: target %d, limit %d; want them untouched", After-1, p, l)
	}
	restore()
	if RelaxedTimes() != times {
		t.Fatal("a run below After counted as relaxed")
	}
}

// TestRelaxUntilTheLastRunIsOver: during a run the collector waits for the
// memory limit, Budget above what the daemon held; runs that overlap put
// it back once, when the last is over, and a restore called twice counts
// once.
func TestRelaxUntilTheLastRunIsOver(t *testing.T) {
	setCollector(t, 50, math.MaxInt64)
	times := RelaxedTimes()
	before := held()
	if before <= 0 {
		t.Fatalf("held: %d", before)
	}
	first := Relax(After)
	p, l := collector()
	if p != relaxedPercent {
		t.Fatalf("target during a run: %d, want %d", p, relaxedPercent)
	}
	if l < before+Budget/2 || l > held()+Budget {
		t.Fatalf("limit during a run: %d; held %d before, %d now, budget %d", l, before, held(), Budget)
	}
	second := Relax(2 * After)
	first()
	first()
	if p, l2 := collector(); p != relaxedPercent || l2 != l {
		t.Fatalf("one of two runs over: target %d, limit %d; want %d, %d", p, l2, relaxedPercent, l)
	}
	second()
	if p, l := collector(); p != 50 || l != math.MaxInt64 {
		t.Fatalf("after the runs: target %d, limit %d; want 50 and none", p, l)
	}
	if got := RelaxedTimes() - times; got != 1 {
		t.Fatalf("relaxed %d times for two runs that overlapped, want 1", got)
	}
}

// TestRelaxKeepsALowerLimit: a memory limit below what a run would set
// stays; the run ends with it as it was.
func TestRelaxKeepsALowerLimit(t *testing.T) {
	low := held() + 1<<20
	setCollector(t, 50, low)
	restore := Relax(After)
	if _, l := collector(); l != low {
		t.Fatalf("limit during a run: %d, want the lower one set before, %d", l, low)
	}
	restore()
	if p, l := collector(); p != 50 || l != low {
		t.Fatalf("after the run: target %d, limit %d; want 50, %d", p, l, low)
	}
}

// TestRelaxLeavesACollectorOff: GOGC=off (or a target as high as a run's)
// is the user's: a run changes nothing.
func TestRelaxLeavesACollectorOff(t *testing.T) {
	for _, percent := range []int{-1, relaxedPercent, 4 * relaxedPercent} {
		setCollector(t, percent, math.MaxInt64)
		times := RelaxedTimes()
		restore := Relax(After)
		if p, l := collector(); p != percent || l != math.MaxInt64 {
			t.Fatalf("target %d: during a run %d, limit %d; want them untouched", percent, p, l)
		}
		restore()
		if p, _ := collector(); p != percent || RelaxedTimes() != times {
			t.Fatalf("target %d: after a run %d, relaxed %d times", percent, p, RelaxedTimes()-times)
		}
	}
}
