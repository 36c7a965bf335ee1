package watch

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestBarrierKeepsOneFile: barriers, one after another and many at once,
// each see the events queued before them, and all of them together take
// one inode: the barrier file is renamed from round to round, never made
// and removed.
func TestBarrierKeepsOneFile(t *testing.T) {
	h, _ := newHub(t)
	root := t.TempDir()
	w := watchDir(t, h, root, Options{Coalesce: time.Hour})
	start := changesT(t, w, Mark{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inodes := map[uint64]bool{}
	for i := range 20 {
		mkfile(t, filepath.Join(root, "f"+string(rune('a'+i))), "x")
		if i%4 == 0 {
			// Callers at once share rounds.
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := h.barrier(ctx); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
		} else if err := h.barrier(ctx); err != nil {
			t.Fatal(err)
		}
		// Changes waits for a barrier of its own.
		if n := len(changesT(t, w, start.Mark).Paths); n != i+1 {
			t.Fatalf("after barrier %d Changes has %d paths, want %d", i, n, i+1)
		}
		dir, err := h.barrierDir()
		if err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) != 1 {
			t.Fatalf("barrier %d: the barrier dir holds %v (%v), want one file", i, ents, err)
		}
		fi, err := os.Stat(filepath.Join(dir, ents[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		inodes[fi.Sys().(*syscall.Stat_t).Ino] = true
	}
	if runtime.GOOS == "linux" && len(inodes) != 1 {
		t.Errorf("20 rounds of barriers used %d inodes, want 1", len(inodes))
	}
}
