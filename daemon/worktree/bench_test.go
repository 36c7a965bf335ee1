package worktree

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkPrepareRemove makes a worktree of a small repository (with a
// .worktreeinclude file to copy, a port, no setup) and removes it.
func BenchmarkPrepareRemove(b *testing.B) {
	repo := newRepo(b)
	write(b, repo, ".env", "SECRET=1\n")
	m, _ := newManager(b)
	r := req(b, repo, "x")
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		r.Name = "b" + strconv.Itoa(i)
		p, err := m.Prepare(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Remove(ctx, RemoveRequest{Key: p.Entry.Key()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatus measures what sessionctl worktrees costs per worktree.
func BenchmarkStatus(b *testing.B) {
	repo := newRepo(b)
	m, _ := newManager(b)
	e := prepare(b, m, req(b, repo, "s")).Entry
	for b.Loop() {
		if _, err := StatusOf(context.Background(), e, nil); err != nil {
			b.Fatal(err)
		}
	}
}
