//go:build linux

package logfile

import (
	"bytes"
	"strconv"
	"testing"
	"time"
)

// BenchmarkRotatePass measures one pass that moves one chunk out of
// output.log (copy into output.log.1, shift, collapse or punch), per chunk
// size and mode. The writes that fill the log are not timed.
func BenchmarkRotatePass(b *testing.B) {
	for _, tc := range modeCases()[:2] {
		for _, size := range []int64{1 << 20, 10 << 20} {
			b.Run(tc.name+"/"+sizeName(size), func(b *testing.B) {
				// Nothing calls Notify: the benchmark runs the passes.
				l := newLog(b, tc.dir(b), Options{MaxSize: size, Keep: 3})
				w, err := OpenAppend(l.Path())
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				block := bytes.Repeat([]byte("0123456789abcde\n"), 64<<10/16)
				fill := func(n int64) {
					for ; n > 0; n -= int64(len(block)) {
						if _, err := w.Write(block); err != nil {
							b.Fatal(err)
						}
					}
				}
				fill(size)
				b.SetBytes(l.chunk)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					fill(l.chunk)
					b.StartTimer()
					if err := l.Rotate(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if st := l.Stats(); st.Rotations < int64(b.N) || st.Mode != tc.want {
					b.Fatalf("stats %+v after %d passes", st, b.N)
				}
			})
		}
	}
}

func sizeName(n int64) string { return strconv.FormatInt(n>>20, 10) + "MiB" }

// BenchmarkFullSpeedWriter measures what a child writing sequence lines at
// full speed gets through while the rotator (log_max_size 10 MiB, log_keep
// 3) runs, against the same child with rotation off. Each op is 16 MiB
// written; peak-disk-MiB is the most the log's files took on disk, sampled
// every 5 ms.
func BenchmarkFullSpeedWriter(b *testing.B) {
	const perOp = 16 << 20
	cases := []struct {
		name    string
		dir     func(testing.TB) string
		maxSize int64
	}{
		{"collapse", collapseDir, 10 << 20},
		{"punch", tmpfsDir, 10 << 20},
		{"ext4-no-rotation", collapseDir, 0},
		{"tmpfs-no-rotation", tmpfsDir, 0},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			l := newLog(b, tc.dir(b), Options{MaxSize: tc.maxSize, Keep: 3})
			stop := notifyOnWrite(b, l)
			defer stop()
			b.SetBytes(perOp)
			cmd := seqWriter(b, int64(b.N)*perOp, 0)
			b.ResetTimer()
			startWriter(b, l.Path(), cmd)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var peak int64
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
		wait:
			for {
				select {
				case err := <-done:
					if err != nil {
						b.Fatal(err)
					}
					break wait
				case <-tick.C:
					if n, err := l.DiskUsage(); err == nil {
						peak = max(peak, n)
					}
				}
			}
			b.StopTimer()
			if tc.maxSize > 0 {
				b.ReportMetric(float64(peak)/(1<<20), "peak-disk-MiB")
				st := l.Stats()
				b.ReportMetric(float64(st.Dropped)/float64(int64(b.N)*perOp)*100, "dropped-%")
			}
		})
	}
}
