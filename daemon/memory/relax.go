package memory

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// A run of many ends at once (`stop --all`, a shutdown) makes garbage fast
// and keeps little: each end encodes its records and its handoff, reads
// the project's state and lets it all go. With the daemon's collector
// target (50 %, for a small steady heap), a stop of 1000 collected five
// times on the way, each time scanning the stacks of a thousand workers
// (a fifth of the daemon's user CPU). While such a run is under way the
// collector waits instead until the run has made Budget of memory more
// than the daemon held when it began, and the settling after the run
// (Settler) hands it all back.

// Budget is how much more memory the daemon may hold during a run of ends
// before it collects: a stop of 1000 makes about 40 MiB of garbage.
const Budget = 64 << 20

// relaxedPercent is the collector's target during a run: high enough that
// the memory limit of Budget decides when it collects. A percentage, not
// off: turning the collector off waits for a collection under way.
const relaxedPercent = 1000

// relaxed is the collector's state outside runs, and how many runs are
// under way.
var relaxed struct {
	sync.Mutex
	runs    int
	percent int
	limit   int64
	// times counts the times the collector was relaxed, for tests.
	times int
}

// Relax relaxes the collector for a run of n ends (nothing below After)
// and returns what puts it back once the run is over; runs that overlap
// put it back when the last is over. A collector turned off (GOGC=off), or
// one as relaxed already, is left as it is.
func Relax(n int) (restore func()) {
	if n < After {
		return func() {}
	}
	relaxed.Lock()
	defer relaxed.Unlock()
	if relaxed.runs == 0 {
		h := held()
		if h == 0 {
			return func() {}
		}
		percent := debug.SetGCPercent(relaxedPercent)
		if percent < 0 || percent >= relaxedPercent {
			debug.SetGCPercent(percent)
			return func() {}
		}
		relaxed.percent = percent
		relaxed.limit = debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(relaxed.limit, h+Budget))
		relaxed.times++
	}
	relaxed.runs++
	var once sync.Once
	return func() {
		once.Do(func() {
			relaxed.Lock()
			defer relaxed.Unlock()
			if relaxed.runs--; relaxed.runs == 0 {
				debug.SetGCPercent(relaxed.percent)
				debug.SetMemoryLimit(relaxed.limit)
			}
		})
	}
}

// RelaxedTimes returns how many times the collector was relaxed.
func RelaxedTimes() int {
	relaxed.Lock()
	defer relaxed.Unlock()
	return relaxed.times
}

// held is the memory the runtime holds as its memory limit counts it: all
// it mapped, less what it handed back.
func held() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
