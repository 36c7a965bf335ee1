package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGroupCommit: writes that wait at once share file system syncs, every
// one lands whole, and a failed sync fails every write it served.
func TestGroupCommit(t *testing.T) {
	var files, fss atomic.Int64
	fsyncFD = func(fd int) error { files.Add(1); return unix.Fsync(fd) }
	syncFS = func(fd int) error { fss.Add(1); return unix.Syncfs(fd) }
	t.Cleanup(func() { fsyncFD, syncFS = unix.Fsync, unix.Syncfs })

	dir := t.TempDir()
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			sub := filepath.Join(dir, fmt.Sprint(i))
			if errs[i] = os.Mkdir(sub, 0o700); errs[i] == nil {
				errs[i] = WriteFile(filepath.Join(sub, "f.json"), []byte(fmt.Sprintf(`{"n": %d}`, i)), 0o600)
			}
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(i), "f.json"))
		if err != nil || string(b) != fmt.Sprintf(`{"n": %d}`, i) {
			t.Fatalf("file %d: %q, %v", i, b, err)
		}
	}
	total := files.Load() + fss.Load()
	t.Logf("%d writes: %d file syncs, %d file system syncs", n, files.Load(), fss.Load())
	if total >= 2*n {
		t.Errorf("%d writes made %d syncs: none was shared", n, total)
	}

	// A failing sync fails what it served, alone or in a group.
	syncFS = func(int) error { return unix.EIO }
	fsyncFD = func(int) error { return unix.EIO }
	if err := WriteFile(filepath.Join(dir, "0", "f.json"), []byte("x"), 0o600); err == nil {
		t.Error("a write whose sync failed succeeded")
	}
	var failed atomic.Int64
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if WriteFile(filepath.Join(dir, fmt.Sprint(i), "g.json"), []byte("y"), 0o600) != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 20 {
		t.Errorf("%d of 20 writes failed with every sync failing", failed.Load())
	}
}

// BenchmarkParallelWrites: atomic replacements from many goroutines at once,
// as when many sessions end together.
func BenchmarkParallelWrites(b *testing.B) {
	dir := b.TempDir()
	var n atomic.Int64
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		sub := filepath.Join(dir, fmt.Sprint(n.Add(1)))
		if err := os.Mkdir(sub, 0o700); err != nil {
			b.Fatal(err)
		}
		for pb.Next() {
			if err := WriteFile(filepath.Join(sub, "r.json"), []byte(`{"state": "ended"}`), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestProgressAppendsShareSyncs: the ends of many projects' sessions,
// each appending to its project's existing progress log at once, share
// file system syncs, and every entry lands once.
func TestProgressAppendsShareSyncs(t *testing.T) {
	dir := t.TempDir()
	const n = 100
	projects := make([]*Project, n)
	for i := range projects {
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		p, err := OpenProject(sub, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendProgress("", ProgressEntry{SessionID: "first"}); err != nil {
			t.Fatal(err)
		}
		projects[i] = p
	}
	var files, fss atomic.Int64
	fsyncFD = func(fd int) error { files.Add(1); return unix.Fsync(fd) }
	syncFS = func(fd int) error { fss.Add(1); return unix.Syncfs(fd) }
	t.Cleanup(func() { fsyncFD, syncFS = unix.Fsync, unix.Syncfs })
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i, p := range projects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = p.AppendProgress("", ProgressEntry{SessionID: "second"})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(i), DirName, "progress.md"))
		if err != nil || strings.Count(string(b), "second") != 1 || strings.Count(string(b), "first") != 1 {
			t.Fatalf("log %d: %v\n%s", i, err, b)
		}
	}
	t.Logf("%d appends: %d file syncs, %d file system syncs", n, files.Load(), fss.Load())
	if files.Load()+fss.Load() >= n || fss.Load() == 0 {
		t.Errorf("%d appends made %d file syncs and %d file system syncs: none was shared", n, files.Load(), fss.Load())
	}
}
