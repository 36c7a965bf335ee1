package metrics

import (
	"os"
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

var (
	sessionStates = []string{ipc.StateStarting, ipc.StateRunning, ipc.StateWarned, ipc.StateStopping, ipc.StateEnded, ipc.StateFailed}
	agentStates   = []string{ipc.AgentWorking, ipc.AgentWaiting, ipc.AgentIdle, ipc.AgentUnknown}
)

// sessionFamilies count the sessions by state when scraped: the
// registry's snapshots are the truth, nothing is kept in step with them.
func sessionFamilies(src Sources) []family {
	count := func() (states, agents map[string]int) {
		states, agents = map[string]int{}, map[string]int{}
		if src.Sessions == nil {
			return
		}
		for _, s := range src.Sessions() {
			states[s.State]++
			if s.Agent != nil && ipc.Live(s.State) {
				st := s.Agent.State
				if st == "" {
					st = ipc.AgentUnknown
				}
				agents[st]++
			}
		}
		return
	}
	byState := func(label string, names []string, n map[string]int) []gaugeSample {
		out := make([]gaugeSample, len(names))
		for i, s := range names {
			out[i] = gaugeSample{labels: []string{label}, values: []string{s}, v: float64(n[s])}
		}
		return out
	}
	return []family{
		&gauges{name: "sessiond_sessions", kind: "gauge", help: "Sessions the daemon holds, by state.",
			read: func() []gaugeSample { st, _ := count(); return byState("state", sessionStates, st) }},
		&gauges{name: "sessiond_agent_sessions", kind: "gauge", help: "Live sessions whose agent is known, by the agent's state.",
			read: func() []gaugeSample { _, ag := count(); return byState("state", agentStates, ag) }},
		&gauges{name: "sessiond_contained_memory_bytes", kind: "gauge", help: "Memory the live sessions' cgroups are charged together.",
			read: func() []gaugeSample {
				if src.ContainedMemory == nil {
					return []gaugeSample{{}}
				}
				b, _ := src.ContainedMemory()
				return []gaugeSample{{v: float64(b)}}
			}},
		&gauges{name: "sessiond_contained_sessions", kind: "gauge", help: "Live sessions in a cgroup of their own.",
			read: func() []gaugeSample {
				if src.ContainedMemory == nil {
					return []gaugeSample{{}}
				}
				_, n := src.ContainedMemory()
				return []gaugeSample{{v: float64(n)}}
			}},
	}
}

// watchFamilies read the watchers' counters when scraped.
func watchFamilies(src Sources) []family {
	read := func(pick func(Counts) uint64) func() []gaugeSample {
		return func() []gaugeSample {
			var out []gaugeSample
			for _, w := range []struct {
				name  string
				count func() Counts
			}{{"projects", src.ProjectWatch}, {"logs", src.LogWatch}} {
				var n Counts
				if w.count != nil {
					n = w.count()
				}
				out = append(out, gaugeSample{labels: []string{"watcher"}, values: []string{w.name}, v: float64(pick(n))})
			}
			return out
		}
	}
	return []family{
		&gauges{name: "sessiond_state_syncs_total", kind: "counter",
			help: "Syncs of the daemon's files: a file's or a directory's fsync, or one syncfs serving many writes (group commit).",
			read: func() []gaugeSample {
				if src.Syncs == nil {
					return one(0)
				}
				return one(float64(src.Syncs()))
			}},
		&gauges{name: "sessiond_watch_events_total", kind: "counter",
			help: "Inotify events read, by watcher: projects (the project trees) or logs (the session logs).",
			read: read(func(c Counts) uint64 { return c.Events })},
		&gauges{name: "sessiond_watch_overflows_total", kind: "counter",
			help: "Inotify queue overflows (events lost, rescans made), by watcher.",
			read: read(func(c Counts) uint64 { return c.Overflows })},
	}
}

// one is a family's single unlabelled sample.
func one(v float64) []gaugeSample { return []gaugeSample{{v: v}} }

// runtimeFamilies are the Go runtime's figures, read through
// runtime/metrics (no stop of the world).
func runtimeFamilies() []family {
	read := func(name string) float64 {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		switch s[0].Value.Kind() {
		case metrics.KindUint64:
			return float64(s[0].Value.Uint64())
		case metrics.KindFloat64:
			return s[0].Value.Float64()
		}
		return 0
	}
	g := func(name, kind, help, from string) family {
		return &gauges{name: name, kind: kind, help: help, read: func() []gaugeSample { return one(read(from)) }}
	}
	return []family{
		&gauges{name: "go_goroutines", kind: "gauge", help: "Number of goroutines that currently exist.",
			read: func() []gaugeSample { return one(float64(runtime.NumGoroutine())) }},
		&gauges{name: "go_info", kind: "gauge", help: "Information about the Go environment.",
			read: func() []gaugeSample {
				return []gaugeSample{{labels: []string{"version"}, values: []string{runtime.Version()}, v: 1}}
			}},
		g("go_memstats_heap_alloc_bytes", "gauge", "Bytes of allocated heap objects.", "/memory/classes/heap/objects:bytes"),
		g("go_memstats_sys_bytes", "gauge", "Bytes of memory obtained from the OS.", "/memory/classes/total:bytes"),
		g("go_memstats_stack_inuse_bytes", "gauge", "Bytes in stack spans.", "/memory/classes/heap/stacks:bytes"),
		g("go_gc_cycles_total", "counter", "Completed GC cycles.", "/gc/cycles/total:gc-cycles"),
		g("go_sched_gomaxprocs_threads", "gauge", "The current runtime.GOMAXPROCS setting.", "/sched/gomaxprocs:threads"),
	}
}

// processStart is when the process started, near enough: when this
// package was initialised.
var processStart = time.Now()

// processFamilies are the daemon process's figures: CPU, memory, files.
func processFamilies() []family {
	return []family{
		&gauges{name: "process_cpu_seconds_total", kind: "counter", help: "Total user and system CPU time spent in seconds.",
			read: func() []gaugeSample {
				var ru syscall.Rusage
				if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
					return nil
				}
				tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
				return one(tv(ru.Utime) + tv(ru.Stime))
			}},
		&gauges{name: "process_resident_memory_bytes", kind: "gauge", help: "Resident memory size in bytes.",
			read: func() []gaugeSample {
				if rss, ok := residentBytes(); ok {
					return one(float64(rss))
				}
				return nil
			}},
		&gauges{name: "process_open_fds", kind: "gauge", help: "Number of open file descriptors.",
			read: func() []gaugeSample {
				for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
					if ents, err := os.ReadDir(dir); err == nil {
						return one(float64(len(ents) - 1)) // less the one reading it
					}
				}
				return nil
			}},
		&gauges{name: "process_max_fds", kind: "gauge", help: "Maximum number of open file descriptors.",
			read: func() []gaugeSample {
				var lim syscall.Rlimit
				if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
					return nil
				}
				return one(float64(lim.Cur))
			}},
		&gauges{name: "process_start_time_seconds", kind: "gauge", help: "Start time of the process since unix epoch in seconds.",
			read: func() []gaugeSample { return one(float64(processStart.UnixNano()) / 1e9) }},
	}
}
