package logkeep

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/logfile"
)

const (
	testMax  = 64 << 10
	testKeep = 3
)

// serve runs a keeper in this process on a socket in dir.
func serve(t *testing.T, dir string) (sock string, done <-chan error) {
	t.Helper()
	sock = filepath.Join(dir, "k.sock")
	pr, pw := io.Pipe()
	ch := make(chan error, 1)
	go func() { ch <- Serve(sock, pw, nil); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("keeper: %q %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	return sock, ch
}

// diskPeak samples the blocks of the log's files until stop closes.
func diskPeak(path string, stop <-chan struct{}) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var total int64
			matches, _ := filepath.Glob(path + "*")
			for _, m := range matches {
				if strings.HasSuffix(m, logfile.StampSuffix) {
					continue
				}
				var st syscall.Stat_t
				if syscall.Stat(m, &st) == nil {
					total += st.Blocks * 512
				}
			}
			if total > peak.Load() {
				peak.Store(total)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	return func() int64 { <-done; return peak.Load() }
}

// TestKeeperHoldsTheCap: four writers through the pipe
// keep the log within its cap plus one chunk, whether the daemon's rotator
// (here, a Log notified as inotify would) or the keeper itself rotates;
// the files read back are the newest bytes written, whole and in order.
func TestKeeperHoldsTheCap(t *testing.T) {
	for _, daemonRotates := range []bool{true, false} {
		t.Run(fmt.Sprintf("daemon=%v", daemonRotates), func(t *testing.T) {
			dir := t.TempDir()
			sock, served := serve(t, dir)
			c, err := Connect(Options{Socket: sock, Executable: "/nonexistent", Diag: filepath.Join(dir, "diag")})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "output.log")
			out, err := logfile.OpenAppend(path)
			if err != nil {
				t.Fatal(err)
			}
			w, err := c.Attach(path, out, testMax, testKeep)
			out.Close()
			if err != nil {
				t.Fatal(err)
			}
			var rot *logfile.Log
			stopNotify := make(chan struct{})
			if daemonRotates {
				if rot, err = logfile.Open(path, logfile.Options{MaxSize: testMax, Keep: testKeep}); err != nil {
					t.Fatal(err)
				}
				go func() {
					for {
						select {
						case <-stopNotify:
							return
						case <-time.After(200 * time.Microsecond):
							rot.Notify()
						}
					}
				}()
			} else {
				c.Close() // no daemon: the keeper rotates
			}
			stop := make(chan struct{})
			peak := diskPeak(path, stop)

			// Four writers of 8 MiB each, every line numbered by writer,
			// in writes of whole lines up to PIPE_BUF (so that the
			// writers' lines never interleave in the pipe).
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var b strings.Builder
					n := 0
					for range 8 << 20 / 4080 {
						b.Reset()
						for b.Len() < 4080 {
							fmt.Fprintf(&b, "w%d %07d\n", i, n)
							n++
						}
						if _, err := w.Write([]byte(b.String())); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if _, err := w.Write([]byte("end\n")); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if daemonRotates {
				c.Release(path)
				close(stopNotify)
				_ = rot.Rotate()
				c.Close()
			}
			select {
			case err := <-served:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the keeper did not leave once it held nothing")
			}
			if rot != nil {
				rot.Close()
			}
			close(stop)
			limit := int64(testKeep*testMax + testMax + 4096)
			if p := peak(); p > limit {
				t.Errorf("the log took %d bytes on disk at its peak; the cap plus one chunk is %d", p, limit)
			}
			// Read back: whole lines (but the first), each writer's in order.
			var all []byte
			for i := testKeep - 1; i >= 0; i-- {
				p := path
				if i > 0 {
					p = fmt.Sprintf("%s.%d", path, i)
				}
				b, err := os.ReadFile(p)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				all = append(all, b...)
			}
			text := strings.TrimLeft(string(all), "\x00")
			if !strings.HasSuffix(text, "end\n") {
				t.Fatalf("the log does not end with the last write: %q", text[max(0, len(text)-40):])
			}
			lines := strings.Split(strings.TrimSuffix(text, "end\n"), "\n")
			last := map[string]int{}
			for _, l := range lines[1 : len(lines)-1] {
				var who string
				var n int
				if _, err := fmt.Sscanf(l, "%s %d", &who, &n); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				if prev, ok := last[who]; ok && n != prev+1 {
					t.Fatalf("%s: line %d after %d: bytes lost or doubled inside what is kept", who, n, prev)
				}
				last[who] = n
			}
			if len(text) < testKeep*testMax/2 {
				t.Errorf("only %d bytes kept", len(text))
			}
		})
	}
}

// TestReleasesDoNotWaitForEachOther: the release of one session's log
// does not wait behind another's drain or release. A log left full (the
// daemon is connected, so the keeper leaves rotation to it, and nobody
// rotates) holds its drain until drainTimeout; meanwhile other logs are
// released at once, each with its last line in it.
func TestReleasesDoNotWaitForEachOther(t *testing.T) {
	for _, op := range []string{"drain", "release"} {
		t.Run(op, func(t *testing.T) { testReleasesDoNotWait(t, op) })
	}
}

func testReleasesDoNotWait(t *testing.T, op string) {
	dir := t.TempDir()
	sock, served := serve(t, dir)
	c, err := Connect(Options{Socket: sock, Executable: "/nonexistent", Diag: filepath.Join(dir, "diag")})
	if err != nil {
		t.Fatal(err)
	}
	attach := func(name string) (string, *os.File) {
		t.Helper()
		path := filepath.Join(dir, name)
		out, err := logfile.OpenAppend(path)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		w, err := c.Attach(path, out, testMax, testKeep)
		if err != nil {
			t.Fatal(err)
		}
		return path, w
	}
	full, fw := attach("full.log")
	// At the end the daemon goes, the keeper rotates the full log itself,
	// takes the rest and leaves: nothing writes in dir once it is removed.
	defer func() {
		fw.Close()
		c.Close()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Error("the keeper did not leave")
		}
	}()
	// Past the cap: what is beyond it stays in the pipe.
	chunk := []byte(strings.Repeat("x", 4095) + "\n")
	for written := 0; written < testMax*testKeep+256<<10; written += len(chunk) {
		if _, err := fw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	drained := make(chan time.Duration, 1)
	t0 := time.Now()
	go func() {
		if op == "release" {
			c.Release(full)
		} else {
			c.Drain(full)
		}
		drained <- time.Since(t0)
	}()
	time.Sleep(100 * time.Millisecond) // the drain is under way

	var wg sync.WaitGroup
	others := time.Now()
	took := make([]time.Duration, 6)
	for i := range took {
		path, w := attach(fmt.Sprintf("s%d.log", i))
		if _, err := fmt.Fprintf(w, "last line of %d\n", i); err != nil {
			t.Fatal(err)
		}
		w.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			c.Release(path)
			took[i] = time.Since(start)
			b, err := os.ReadFile(path)
			if err != nil || string(b) != fmt.Sprintf("last line of %d\n", i) {
				t.Errorf("%s after its release: %q, %v", path, b, err)
			}
			if c.Holds(path) {
				t.Errorf("%s is still held after its release", path)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(others); d > drainTimeout/2 {
		t.Errorf("six sessions attached and released in %s (each release %v): they waited for the full log's drain", d, took)
	}
	select {
	case d := <-drained:
		if d < drainTimeout/2 {
			t.Errorf("the full log's drain ended after %s: nothing held it, the test proves nothing", d)
		}
	case <-time.After(2 * drainTimeout):
		t.Error("the full log's drain never ended")
	}
}
