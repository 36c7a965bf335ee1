package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// benchRepo is a 50k-file repository built once per test binary run and
// removed by TestMain.
var benchRepo struct {
	once sync.Once
	root string
	dir  string
	err  error
}

func cleanupBench() {
	if benchRepo.root != "" {
		os.RemoveAll(benchRepo.root)
	}
}

const (
	benchDirs  = 500
	benchFiles = 100 // per dir: 50k files
)

// largeRepo returns the 50k-file repository, committed, with a warm index
// (no racily clean entries, which git would hash again every time).
func largeRepo(b *testing.B) string {
	benchRepo.once.Do(func() {
		root, err := os.MkdirTemp("", "checkpoint-bench-*")
		if err != nil {
			benchRepo.err = err
			return
		}
		benchRepo.root = root
		dir := filepath.Join(root, "repo")
		start := time.Now()
		for d := range benchDirs {
			sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				benchRepo.err = err
				return
			}
			for f := range benchFiles {
				content := fmt.Sprintf("package pkg%03d\n\n// File %d of %d.\nfunc F%d() int { return %d }\n", d, f, benchFiles, f, d*benchFiles+f)
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.go", f)), []byte(content), 0o644); err != nil {
					benchRepo.err = err
					return
				}
			}
		}
		// Packed, as a real repository of this size is; and no background
		// gc --auto competing with the measurements.
		for _, args := range [][]string{
			{"init", "-q"}, {"config", "gc.auto", "0"}, {"add", "-A"},
			{"commit", "-q", "-m", "50k files"}, {"gc", "-q"},
		} {
			if _, err := gitE(dir, nil, args...); err != nil {
				benchRepo.err = err
				return
			}
		}
		// Let the clock move past the index's mtime, then let git rewrite the
		// index with clean stat data.
		time.Sleep(1100 * time.Millisecond)
		if _, err := gitE(dir, []string{"GIT_OPTIONAL_LOCKS=1"}, "update-index", "-q", "--really-refresh"); err != nil {
			benchRepo.err = err
			return
		}
		if _, err := gitE(dir, []string{"GIT_OPTIONAL_LOCKS=1"}, "status", "--porcelain"); err != nil {
			benchRepo.err = err
			return
		}
		b.Logf("built %d-file repository in %v", benchDirs*benchFiles, time.Since(start).Round(time.Millisecond))
		benchRepo.dir = dir
	})
	if benchRepo.err != nil {
		b.Fatalf("build benchmark repository: %v", benchRepo.err)
	}
	return benchRepo.dir
}

// BenchmarkCheckpoint measures a checkpoint of a 50k-file repository with
// one file changed against git stash create and git commit -a on the same
// repository (DESIGN §7: Take ≤ 1.5× git stash create).
func BenchmarkCheckpoint(b *testing.B) {
	dir := largeRepo(b)
	c := New(Options{StateDir: b.TempDir(), Keep: 1 << 30})
	ctx := context.Background()
	n := 0
	change := func() {
		n++
		if err := os.WriteFile(filepath.Join(dir, "pkg042", "f007.go"), []byte(fmt.Sprintf("package pkg042\n// change %d\n", n)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("take", func(b *testing.B) {
		for b.Loop() {
			change()
			res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "bench", Mode: ModeRef})
			if err != nil {
				b.Fatal(err)
			}
			if res.Skipped || res.FilesChanged != 1 {
				b.Fatalf("Take = %+v, want one file changed", res)
			}
		}
	})
	b.Run("git-stash-create", func(b *testing.B) {
		for b.Loop() {
			change()
			if _, err := gitE(dir, nil, "stash", "create"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("git-commit-a", func(b *testing.B) {
		for b.Loop() {
			change()
			if _, err := gitE(dir, nil, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-a", "-m", "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
