package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchTree makes a project of 5,000 directories (50 with 99 subdirectories
// each) and 50,000 files, with a .gitignore, once per benchmark.
func benchTree(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	mkfile(b, filepath.Join(root, ".gitignore"), "*.o\nbuild/\n")
	for i := range 50 {
		for j := range 100 {
			dir := filepath.Join(root, fmt.Sprintf("d%02d", i))
			if j > 0 {
				dir = filepath.Join(dir, fmt.Sprintf("s%02d", j))
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for k := range 10 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", k)), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return root
}

// rssBytes reads the process's resident set size.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkWatchReady measures the time from Watch to ready on a 50k-file,
// 5k-directory tree, and the heap and RSS the watch adds.
func BenchmarkWatchReady(b *testing.B) {
	root := benchTree(b)
	h, _ := newHub(b)
	var heap, rss float64
	dirs := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		debug.FreeOSMemory() // so that RSS before and after compare
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		rss0 := rssBytes()
		b.StartTimer()
		w, err := h.Watch(root, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		debug.FreeOSMemory()
		runtime.ReadMemStats(&m1)
		heap += float64(int64(m1.HeapInuse)-int64(m0.HeapInuse)) / (1 << 20)
		rss += float64(rssBytes()-rss0) / (1 << 20)
		dirs = w.Stats().Dirs
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(heap/float64(b.N), "heap-MiB/op")
	b.ReportMetric(rss/float64(b.N), "rss-MiB/op")
	b.ReportMetric(float64(dirs), "dirs")
}

// BenchmarkEventLatency measures the time from a file write to its path in
// Stats, with the default coalescing window and with a 1ms one.
func BenchmarkEventLatency(b *testing.B) {
	for _, coalesce := range []time.Duration{DefaultCoalesce, time.Millisecond} {
		b.Run("coalesce="+coalesce.String(), func(b *testing.B) {
			root := b.TempDir()
			mkdirs(b, root, "a/b")
			h, _ := newHub(b)
			w := watchDir(b, h, root, Options{Coalesce: coalesce, MaxFiles: b.N + 10})
			b.ResetTimer()
			for i := range b.N {
				name := fmt.Sprintf("a/b/f%d", i)
				if err := os.WriteFile(filepath.Join(root, name), nil, 0o644); err != nil {
					b.Fatal(err)
				}
				deadline := time.Now().Add(10 * time.Second)
				for !slices.Contains(w.Stats().FilesChanged, name) {
					if time.Now().After(deadline) {
						b.Fatalf("%s never seen", name)
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
}

// BenchmarkBurstCPU writes 10,000 events a second into a watched project
// for one second (100 files rewritten in turn, in batches every 10 ms) and
// reports the watcher's CPU per second of burst, in percent of one core,
// as this process's user+system time beyond what the writes cost alone.
func BenchmarkBurstCPU(b *testing.B) {
	root := b.TempDir()
	mkdirs(b, root, "src")
	burst := func() time.Duration {
		start := cpuTime()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for range 100 {
			for i := range 100 {
				if err := os.WriteFile(filepath.Join(root, "src", "f"+strconv.Itoa(i)), []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			<-tick.C
		}
		return cpuTime() - start
	}
	var pct float64
	for range b.N {
		unwatched := burst()
		h, _ := newHub(b)
		w := watchDir(b, h, root, Options{})
		watched := burst()
		// Let the last coalescing window close inside the measurement.
		time.Sleep(2 * DefaultCoalesce)
		if len(w.Stats().FilesChanged) != 100 {
			b.Fatalf("saw %d files, want 100", len(w.Stats().FilesChanged))
		}
		pct += float64(watched-unwatched) / float64(time.Second) * 100
		w.Close()
		h.Close()
	}
	b.ReportMetric(pct/float64(b.N), "%cpu-during-burst")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
