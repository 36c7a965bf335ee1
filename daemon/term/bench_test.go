package term

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/sessiond/sessiond/ipc"
)

// The benchmarks run the real sessiond binary, built as a release is
// (-trimpath, stripped), in holder mode: the test binary links the test
// framework and, under -race, the race runtime, and would measure neither.
var sessiond struct {
	once sync.Once
	dir  string // made for the build, removed by removeBenchBuild
	path string
	err  error
}

// removeBenchBuild removes the benchmarks' build of sessiond, if one was
// made.
func removeBenchBuild() {
	if sessiond.dir != "" {
		os.RemoveAll(sessiond.dir)
	}
}

func sessiondBinary(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("SESSIOND_BENCH_BINARY"); p != "" {
		// A build to compare: the holders are that binary's.
		return p
	}
	sessiond.once.Do(func() {
		dir, err := os.MkdirTemp("", "sessiond-bench")
		if err != nil {
			sessiond.err = err
			return
		}
		sessiond.dir = dir
		sessiond.path = filepath.Join(dir, "sessiond")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", sessiond.path, "github.com/sessiond/sessiond/cmd/sessiond")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			sessiond.err = fmt.Errorf("build sessiond: %v\n%s", err, out)
		}
	})
	if sessiond.err != nil {
		b.Fatal(sessiond.err)
	}
	return sessiond.path
}

func benchSpec(b *testing.B, argv ...string) Spec {
	b.Helper()
	sd, err := os.MkdirTemp("", "tb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(sd) })
	return Spec{
		Argv:       argv,
		Dir:        sd,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8"},
		SessionDir: sd,
		LogPath:    filepath.Join(sd, "output.log"),
	}
}

func startBench(b *testing.B, spec Spec) *Holder {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := Start(ctx, spec, StartOptions{Executable: sessiondBinary(b)})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// memOf reads a process's resident memory, in KiB: RSS (all resident
// pages), PSS (shared pages divided among the processes that map them) and
// anonymous (its own heap, stacks and data).
func memOf(b *testing.B, pid int) (rss, pss, anon int) {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "Rss:":
			rss = n
		case "Pss:":
			pss = n
		case "Anonymous:":
			anon = n
		}
	}
	return rss, pss, anon
}

func ticksOf(b *testing.B, pid int) int {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data)[strings.LastIndexByte(string(data), ')')+2:])
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// BenchmarkIdleHolders runs 20 holders with an idle shell each, at 80x24
// and at 200x50, and reports their memory once they have settled (start-up,
// the first output and the holder's compaction after 10 quiet seconds) and
// their CPU over 10 idle seconds. Run with -benchtime 1x.
func BenchmarkIdleHolders(b *testing.B) {
	for _, size := range []ipc.TermSize{{Cols: 80, Rows: 24}, {Cols: 200, Rows: 50}} {
		b.Run(size.String(), func(b *testing.B) { benchIdle(b, size) })
	}
}

func benchIdle(b *testing.B, size ipc.TermSize) {
	const n = 20
	for range b.N {
		holders := make([]*Holder, n)
		for i := range holders {
			spec := benchSpec(b, "/bin/sh", "-c", "echo ready; read x")
			spec.Size = size
			holders[i] = startBench(b, spec)
		}
		for _, h := range holders {
			waitBenchScreen(b, h, "ready")
		}
		time.Sleep(compactAfter + 2*time.Second)
		var rss, pss, anon, maxRSS int
		for _, h := range holders {
			r, p, a := memOf(b, h.Info().HolderPID)
			rss, pss, anon, maxRSS = rss+r, pss+p, anon+a, max(maxRSS, r)
		}
		before := 0
		for _, h := range holders {
			before += ticksOf(b, h.Info().HolderPID)
		}
		const idle = 10 * time.Second
		time.Sleep(idle)
		after := 0
		for _, h := range holders {
			after += ticksOf(b, h.Info().HolderPID)
		}
		b.ReportMetric(float64(rss)/n, "rss-KiB/holder")
		b.ReportMetric(float64(maxRSS), "max-rss-KiB")
		b.ReportMetric(float64(pss)/n, "pss-KiB/holder")
		b.ReportMetric(float64(anon)/n, "anon-KiB/holder")
		// Clock ticks are 10 ms: the share of one CPU all 20 used.
		b.ReportMetric(float64(after-before)*10/float64(idle.Milliseconds())*100, "cpu-%-all-20")
		for _, h := range holders {
			_ = h.Send(context.Background(), "", true)
		}
		for _, h := range holders {
			waitBenchExit(b, h)
		}
	}
}

func waitBenchScreen(b *testing.B, h *Holder, want string) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		scr, err := h.Screen(context.Background(), 0)
		if err == nil && strings.Contains(scr.Text(), want) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("screen never showed %q: %v", want, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitBenchExit(b *testing.B, h *Holder) ipc.TermExit {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := h.Wait(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return ex
}

// throughputBytes is what the child writes per iteration.
const throughputBytes = 64 << 20

// BenchmarkThroughput has `yes` write 64 MiB through the holder (terminal,
// emulator, log), with and without a viewer reading along, against the
// same command writing to a file directly and to a terminal read as fast
// as it can be and thrown away: the ceiling of any holder (pty).
func BenchmarkThroughput(b *testing.B) {
	cmd := fmt.Sprintf("yes 'the quick brown fox jumps over the lazy dog' | head -c %d", throughputBytes)
	b.Run("pty", func(b *testing.B) {
		b.SetBytes(throughputBytes)
		for range b.N {
			b.StopTimer()
			ptyCeiling(b, "read go; "+cmd)
		}
	})
	b.Run("file", func(b *testing.B) {
		b.SetBytes(throughputBytes)
		dir := b.TempDir()
		for range b.N {
			c := exec.Command("/bin/sh", "-c", cmd+" > "+filepath.Join(dir, "out"))
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
	for _, viewer := range []bool{false, true} {
		name := "holder"
		if viewer {
			name = "holder+viewer"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(throughputBytes)
			var ticks int
			for range b.N {
				b.StopTimer()
				spec := benchSpec(b, "/bin/sh", "-c", "read go; "+cmd+"; read done")
				h := startBench(b, spec)
				var done chan struct{}
				if viewer {
					c, _, err := h.Attach(context.Background(), true)
					if err != nil {
						b.Fatal(err)
					}
					done = make(chan struct{})
					go func() {
						defer close(done)
						fr := ipc.NewTermFrameReader(c)
						for {
							if _, err := fr.Next(); err != nil {
								return
							}
						}
					}()
				}
				pid := h.Info().HolderPID
				before := ticksOf(b, pid)
				b.StartTimer()
				if err := h.Send(context.Background(), "", true); err != nil {
					b.Fatal(err)
				}
				// The terminal turns the newlines into CRLF: all is through
				// once the log holds the bytes plus one CR a line.
				want := int64(throughputBytes + throughputBytes/45)
				for {
					fi, err := os.Stat(spec.LogPath)
					if err == nil && fi.Size() >= want {
						break
					}
					time.Sleep(time.Millisecond)
				}
				b.StopTimer()
				ticks += ticksOf(b, pid) - before
				_ = h.Send(context.Background(), "", true)
				if ex := waitBenchExit(b, h); ex.Code != 0 {
					b.Fatalf("child ended with %s", ex)
				}
				if done != nil {
					<-done
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(ticks)*10/float64(b.N), "holder-cpu-ms/op")
		})
	}
}

// BenchmarkAttachLatency measures an attach from the dial to the end of
// the first repaint, on a full 120x40 screen.
func BenchmarkAttachLatency(b *testing.B) {
	spec := benchSpec(b, "/bin/sh", "-c", `i=0; while [ $i -lt 60 ]; do printf '\033[3%dmline %d of a full screen of coloured text\033[0m\n' $((i % 7)) $i; i=$((i+1)); done; echo READY; read x`)
	spec.Size = ipc.TermSize{Cols: 120, Rows: 40}
	h := startBench(b, spec)
	waitBenchScreen(b, h, "READY")
	b.ResetTimer()
	for range b.N {
		c, _, err := h.Attach(context.Background(), true)
		if err != nil {
			b.Fatal(err)
		}
		fr := ipc.NewTermFrameReader(c)
		var seen strings.Builder
		for !strings.Contains(seen.String(), "READY") {
			f, err := fr.Next()
			if err != nil {
				b.Fatal(err)
			}
			seen.Write(f.Payload)
		}
		c.Close()
	}
	b.StopTimer()
	_ = h.Send(context.Background(), "", true)
	waitBenchExit(b, h)
}

// ptyCeiling runs argv on a terminal of its own, tells it to go (it reads
// a line first) with the timer stopped, and reads the terminal in the
// holder's way (the runtime's poller, 8 KiB reads) until it is closed.
func ptyCeiling(b *testing.B, script string) {
	b.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		b.Fatal(err)
	}
	defer slave.Close()
	c := exec.Command("/bin/sh", "-c", script)
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := c.Start(); err != nil {
		master.Close()
		b.Fatal(err)
	}
	slave.Close()
	m, err := pollable(master)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	buf := make([]byte, 8<<10)
	if _, err := m.Write([]byte("\n")); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	for {
		if _, err := m.Read(buf); err != nil {
			break // EIO: the terminal's last writer has gone
		}
	}
	b.StopTimer()
	if err := c.Wait(); err != nil {
		b.Fatal(err)
	}
}
