package checkpoint

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every id handed out for a checkpoint, through any number of prunes, still
// finds it: its own, a former one (the same tree), or one folded into it.
func TestIDsStayTrue(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	var handed []Result
	take := func(n int) {
		for range n {
			write(t, dir, fmt.Sprintf("f%d.txt", len(handed)), "x\n")
			res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s"})
			if err != nil {
				t.Fatal(err)
			}
			handed = append(handed, res)
		}
	}
	take(6)
	if n, err := c.Prune(ctx, PruneRequest{Dir: dir, Keep: 3}); err != nil || n != 3 {
		t.Fatalf("Prune = %d, %v; want 3", n, err)
	}
	take(3)
	if n, err := c.Prune(ctx, PruneRequest{Dir: dir, Keep: 2}); err != nil || n != 4 {
		t.Fatalf("second Prune = %d, %v; want 4", n, err)
	}
	cps := sessionCheckpoints(t, c, dir, "s")
	if len(cps) != 2 {
		t.Fatalf("%d checkpoints kept, want 2", len(cps))
	}
	// The oldest kept one had two ids before (one per prune it went through).
	if len(cps[1].FormerIDs) != 1 || cps[1].FormerIDs[0] != handed[7].ID || cps[1].Folded != 7 {
		t.Errorf("oldest kept = former %q, folded %d; want [%s], 7", cps[1].FormerIDs, cps[1].Folded, handed[7].ID)
	}
	for i, h := range handed {
		f, err := c.Lookup(ctx, LookupRequest{Dir: dir, ID: h.ID[:10]})
		if err != nil {
			t.Errorf("Lookup of checkpoint %d (%.10s): %v", i, h.ID, err)
			continue
		}
		want := MatchFolded
		switch i {
		case 7:
			want = MatchFormer
		case 8:
			want = MatchFormer
		}
		if f.Match != want || f.ID != h.ID {
			t.Errorf("Lookup of checkpoint %d = %s %.10s, want %s", i, f.Match, f.ID, want)
		}
		if f.Match == MatchFolded && f.Checkpoint.ID != cps[1].ID {
			t.Errorf("folded checkpoint %d leads to %.10s, want the oldest kept %.10s", i, f.Checkpoint.ID, cps[1].ID)
		}
		if f.Match == MatchFormer && f.Checkpoint.tree != h.Tree {
			t.Errorf("former id of checkpoint %d leads to another tree", i)
		}
	}
	if f, err := c.Lookup(ctx, LookupRequest{Dir: dir, ID: cps[0].ID}); err != nil || f.Match != MatchCurrent {
		t.Errorf("Lookup of a current id = %+v, %v", f, err)
	}
	// A folded checkpoint restores to its own state while git has it...
	_, restored, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: handed[2].ID})
	if err != nil || restored.ID != handed[2].ID || restored.tree != handed[2].Tree {
		t.Fatalf("Restore of a folded checkpoint = %+v, %v", restored, err)
	}
	if exists(dir, "f3.txt") || !exists(dir, "f2.txt") {
		t.Error("the work tree is not the folded checkpoint's")
	}
	// ...and once git dropped it, says so and names where its changes are.
	gitT(t, dir, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
	gitT(t, dir, "gc", "-q", "--prune=now")
	_, _, err = c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: handed[1].ID})
	if !errors.Is(err, ErrFolded) || !strings.Contains(err.Error(), cps[1].ID[:12]) {
		t.Errorf("Restore of a folded checkpoint git dropped = %v, want ErrFolded naming %.12s", err, cps[1].ID)
	}
	if f, err := c.Lookup(ctx, LookupRequest{Dir: dir, ID: handed[1].ID}); err != nil || f.Match != MatchFolded {
		t.Errorf("Lookup after gc = %+v, %v", f, err)
	}
	// Former ids restore, to the same tree.
	if _, restored, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: handed[8].ID[:8]}); err != nil || restored.tree != handed[8].Tree {
		t.Errorf("Restore by a former id = %+v, %v", restored, err)
	}
}

// Retention by age: Take folds a ref's checkpoints once its oldest is well
// past MaxAge, keeps the newest whatever its age, and once a day shrinks
// the refs of old sessions too. Pinned checkpoints stay.
func TestRetentionByAge(t *testing.T) {
	dir := newRepo(t)
	c := New(Options{StateDir: t.TempDir(), MaxAge: 30 * 24 * time.Hour})
	now := time.Now()
	c.clock = func() time.Time { return now.Add(-40 * 24 * time.Hour) }
	ctx := ctxT(t)
	var old []Result
	for i := range 3 {
		for _, s := range []string{"s", "gone"} {
			write(t, dir, fmt.Sprintf("%s%d.txt", s, i), "x\n")
			res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: s})
			if err != nil {
				t.Fatal(err)
			}
			if s == "s" {
				old = append(old, res)
			}
		}
	}
	c.aged = agedPrunes{} // as if the daemon restarted a month later
	c.clock = func() time.Time { return now }
	write(t, dir, "new.txt", "x\n")
	latest, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	s := sessionCheckpoints(t, c, dir, "s")
	if len(s) != 1 || s[0].ID != latest.ID || s[0].Folded != 3 {
		t.Errorf("session s after a month: %+v, want the new checkpoint with 3 folded", s)
	}
	gone := sessionCheckpoints(t, c, dir, "gone")
	if len(gone) != 1 || gone[0].Folded != 2 || gone[0].FilesChanged != 6 {
		t.Errorf("old session: %+v, want its newest checkpoint, with 2 folded and all 6 files", gone)
	}
	for _, o := range old {
		if _, err := c.Lookup(ctx, LookupRequest{Dir: dir, ID: o.ID}); err != nil {
			t.Errorf("Lookup of an aged-out checkpoint: %v", err)
		}
	}

	// Pins hold against count and age.
	for i := range 4 {
		write(t, dir, fmt.Sprintf("p%d.txt", i), "x\n")
		if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	ps := sessionCheckpoints(t, c, dir, "p")
	pinned := ps[2].ID
	if _, err := c.Prune(ctx, PruneRequest{Dir: dir, Keep: 1, Pin: []string{pinned[:8]}}); err != nil {
		t.Fatal(err)
	}
	ps = sessionCheckpoints(t, c, dir, "p")
	if len(ps) != 2 || ps[1].tree != sessionTree(t, dir, pinned) {
		t.Errorf("after a prune keeping 1 and a pin: %d checkpoints %+v", len(ps), ps)
	}
	if _, err := c.Prune(ctx, PruneRequest{Dir: dir, Pin: []string{"ffffffff"}}); !errors.Is(err, ErrUnknownCheckpoint) {
		t.Errorf("Prune pinning an unknown id = %v, want ErrUnknownCheckpoint", err)
	}
}

func sessionTree(t *testing.T, dir, id string) string {
	return gitT(t, dir, "rev-parse", id+"^{tree}")
}

// A checkpoint's subject names the agent's turn and the files changed, so
// that the list reads like a history of the conversation.
func TestMessagesNameTurnAndFiles(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	for _, f := range []string{"a.go", "b.go", "c.go", "d.go", "e.go"} {
		write(t, dir, "src/"+f, "package src\n")
	}
	res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Turn: "  Fix the login bug\x1b[31m, please\nand the rest of a long prompt\n", Message: "turn 1"})
	if err != nil {
		t.Fatal(err)
	}
	want := `Turn "Fix the login bug[31m, please": 5 files changed: src/a.go, src/b.go, src/c.go and 2 more`
	if res.Summary != want {
		t.Errorf("Summary = %q\nwant      %q", res.Summary, want)
	}
	write(t, dir, "README.md", "changed\n")
	res2, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Summary != "Checkpoint: 1 file changed: README.md" {
		t.Errorf("Summary = %q", res2.Summary)
	}
	cps := sessionCheckpoints(t, c, dir, "s")
	if cps[1].Turn != "Fix the login bug[31m, please" || cps[1].Summary != want || cps[1].Message != "turn 1" ||
		!slices.Equal(cps[1].Files, []string{"src/a.go", "src/b.go", "src/c.go", "src/d.go", "src/e.go"}) {
		t.Errorf("listed %+v", cps[1])
	}
	if cps[0].Turn != "" || cps[0].Message != cps[0].Summary {
		t.Errorf("listed %+v", cps[0])
	}
	log := gitT(t, dir, "log", "--format=%s", RefPrefix+"s", "-2")
	if log != res2.Summary+"\n"+want {
		t.Errorf("git log of the ref = %q", log)
	}
}

func TestTurnLabel(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "",
		"\n\n  \n":                    "",
		"fix it":                      "fix it",
		"\n  two  spaces\tand tab\n":  "two spaces and tab",
		"first\nsecond":               "first",
		strings.Repeat("x", 70):       strings.Repeat("x", 59) + "…",
		"é" + strings.Repeat("ü", 70): "é" + strings.Repeat("ü", 58) + "…",
		"bell\a and \x1b[1mbold":      "bell and [1mbold",
	} {
		if got := TurnLabel(in); got != want {
			t.Errorf("TurnLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStats(t *testing.T) {
	dir := newRepo(t)
	c := New(Options{StateDir: t.TempDir(), MaxFileSize: 1 << 10})
	ctx := ctxT(t)
	if st, err := c.Stats(ctx, StatsRequest{Dir: dir}); err != nil || st.Checkpoints != 0 || st.Objects != 0 {
		t.Fatalf("Stats before any checkpoint = %+v, %v", st, err)
	}
	write(t, dir, "big.bin", strings.Repeat("b", 5000))
	write(t, dir, "bigger.bin", strings.Repeat("c", 9000))
	write(t, dir, "node_modules/a/x.js", strings.Repeat("n", 3000))
	write(t, dir, "node_modules/b/y.js", strings.Repeat("m", 400))
	write(t, dir, "kept.txt", "kept\n")
	for _, s := range []string{"s1", "s2"} {
		write(t, dir, s+".txt", s+"\n")
		if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: s}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.Stats(ctx, StatsRequest{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// Two commits, the root trees, and the blobs of s1.txt, s2.txt, kept.txt.
	objs := gitT(t, dir, "rev-list", "--objects", "--glob="+RefPrefix+"*", "--not", "--branches")
	if n := len(strings.Split(objs, "\n")); st.Objects != n || n < 5 {
		t.Errorf("Objects = %d, rev-list says %d", st.Objects, n)
	}
	if st.Checkpoints != 2 || st.Sessions != 2 || st.DiskBytes <= 0 || st.SizeBytes <= 0 {
		t.Errorf("Stats = %+v", st)
	}
	want := []LeftOutEntry{
		{Path: "bigger.bin", Bytes: 9000, Files: 1},
		{Path: "big.bin", Bytes: 5000, Files: 1},
		{Path: "node_modules/", Bytes: 3400, Files: 2},
	}
	if !slices.Equal(st.LeftOut, want) {
		t.Errorf("LeftOut = %+v, want %+v", st.LeftOut, want)
	}
	if st, _ := c.Stats(ctx, StatsRequest{Dir: dir, Largest: 1}); len(st.LeftOut) != 1 {
		t.Errorf("Largest 1 gave %d entries", len(st.LeftOut))
	}
}

// checkpoint_max_file is per call, so a daemon keeps one Checkpointer, and
// one lock per repository, whatever the specs: checkpoints of one project
// never run at once.
func TestOneLockPerRepository(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	write(t, dir, "mid.bin", strings.Repeat("x", 3000))
	var wg sync.WaitGroup
	results := make([]Result, 6)
	errs := make([]error, 6)
	for i := range 6 {
		wg.Go(func() {
			size := int64(1000)
			if i%2 == 1 {
				size = 10000
			}
			results[i], errs[i] = c.Take(ctx, TakeRequest{Dir: dir, SessionID: fmt.Sprintf("s%d", i), MaxFileSize: size})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		in := contains(treeFiles(t, dir, results[i].Tree), "mid.bin")
		if in != (i%2 == 1) {
			t.Errorf("checkpoint %d (limit %d) has mid.bin: %v", i, []int{1000, 10000}[i%2], in)
		}
	}
	c.mu.Lock()
	n := len(c.locks)
	c.mu.Unlock()
	if n != 1 {
		t.Errorf("%d locks for one repository", n)
	}
}
