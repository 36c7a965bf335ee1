//go:build linux

package logfile

import (
	"testing"
	"time"
)

// BenchmarkSeen is the cost the daemon adds to each inotify write event of
// a log: a stat and one 16-byte write, plus a compaction every
// DefaultStampsMax/2 bursts. Each burst here is 2 ms after the last, so
// none coalesce.
func BenchmarkSeen(b *testing.B) {
	l := newLog(b, b.TempDir(), Options{MaxSize: 1 << 30, Stamps: true})
	w, err := OpenAppend(l.Path())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	line := []byte("0123456789abcde\n")
	t := time.Now()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Write(line)
		t = t.Add(2 * time.Millisecond)
		l.Seen(t)
	}
}

// BenchmarkStampsRead is what a logs --timestamps request reads first: a
// full stamp file.
func BenchmarkStampsRead(b *testing.B) {
	l := newLog(b, b.TempDir(), Options{MaxSize: 1 << 30, Stamps: true})
	w, _ := OpenAppend(l.Path())
	defer w.Close()
	t := time.Now()
	for i := 0; i < DefaultStampsMax-2; i++ {
		w.Write([]byte("x\n"))
		t = t.Add(2 * time.Millisecond)
		l.Seen(t)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Stamps(nil); err != nil {
			b.Fatal(err)
		}
	}
}
