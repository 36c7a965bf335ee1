package proc

import (
	"os"
	"testing"
)

// TestReadStat: this process's own stat, read with bare system calls.
func TestReadStat(t *testing.T) {
	self, err := readStat(os.Getpid())
	if err != nil || self.pid != os.Getpid() || self.ppid != os.Getppid() || self.rss <= 0 || self.state == 0 {
		t.Fatalf("readStat(self) = %+v, %v", self, err)
	}
	if _, err := readStat(1 << 30); err == nil {
		t.Fatal("readStat of no process: no error")
	}
	if len(allStats()) < 2 {
		t.Fatal("allStats found fewer than this process and its parent")
	}
}

// BenchmarkAllStats is the cost of the /proc walk a listing refreshes its
// usage column with, for the processes on this machine.
func BenchmarkAllStats(b *testing.B) {
	n := 0
	for b.Loop() {
		n = len(allStats())
	}
	b.ReportMetric(float64(n), "procs")
}
