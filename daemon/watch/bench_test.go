package watch

import (
	"fmt"
	"os"
	"os/exec"
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
	mkTree(b, root, 50, 100, 10, "")
	return root
}

// mkTree makes top directories under root, each with sub-1
// subdirectories, and files Go files in each of them, holding content.
func mkTree(b *testing.B, root string, top, sub, files int, content string) {
	b.Helper()
	for i := range top {
		for j := range sub {
			dir := filepath.Join(root, fmt.Sprintf("d%02d", i))
			if j > 0 {
				dir = filepath.Join(dir, fmt.Sprintf("s%02d", j))
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for k := range files {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", k)), []byte(content), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
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

// benchRepo makes a git repository of 100 directories (10 with 9
// subdirectories each) and 1,000 files, all committed, with a .gitignore
// and an ignored build directory: the size of a project an agent works in.
func benchRepo(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	mkfile(b, filepath.Join(root, ".gitignore"), "*.o\nbuild/\n")
	mkTree(b, root, 10, 10, 10, "package x\n")
	for i := range 20 {
		mkfile(b, filepath.Join(root, "build", fmt.Sprintf("o%d", i), "a.o"), "")
	}
	gitInit(b, root)
	runGit(b, root, "add", "-A")
	runGit(b, root, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "-m", "one")
	return root
}

// BenchmarkWatchReadyRepo measures the time from Watch to ready on
// benchRepo's repository: git's rules decide what is ignored there.
func BenchmarkWatchReadyRepo(b *testing.B) {
	root := benchRepo(b)
	h, _ := newHub(b)
	dirs := 0
	b.ResetTimer()
	for range b.N {
		w, err := h.Watch(root, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		dirs = w.Stats().Dirs
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(dirs), "dirs")
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

// BenchmarkBurstCPU has another process (python3) write 10,000 times a
// second into a watched project for two seconds (100 files rewritten in
// turn, in batches every 10 ms) and reports the watcher's CPU while it
// lasts, in percent of one core: this process's user+system time, since
// the writes and the kernel's share of them are the writer's.
func BenchmarkBurstCPU(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Fatalf("this benchmark needs python3 as the writer: %v", err)
	}
	root := b.TempDir()
	mkdirs(b, root, "src")
	writer := `
import os, sys, time
d = sys.argv[1]
start = time.monotonic()
for batch in range(200):
    for i in range(100):
        with open(os.path.join(d, "f%d" % i), "w") as f:
            f.write("x")
    time.sleep(max(0, start + (batch + 1) * 0.01 - time.monotonic()))
`
	var pct float64
	for range b.N {
		h, _ := newHub(b)
		w := watchDir(b, h, root, Options{})
		start, t0 := cpuTime(), time.Now()
		if out, err := exec.Command(py, "-c", writer, filepath.Join(root, "src")).CombinedOutput(); err != nil {
			b.Fatalf("writer: %v\n%s", err, out)
		}
		// Let the last coalescing window close inside the measurement.
		time.Sleep(2 * DefaultCoalesce)
		used, wall := cpuTime()-start, time.Since(t0)
		if len(w.Stats().FilesChanged) != 100 {
			b.Fatalf("saw %d files, want 100", len(w.Stats().FilesChanged))
		}
		pct += float64(used) / float64(wall) * 100
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
