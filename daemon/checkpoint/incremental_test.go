package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/watch"
)

// session drives checkpoints of one project the way the daemon does: a
// watch of the project, and each checkpoint given the watch's changes since
// the mark read with the previous one.
type session struct {
	t     *testing.T
	dir   string
	c     *Checkpointer
	w     *watch.Watch
	mark  watch.Mark
	base  string
	req   TakeRequest
	stats struct{ incremental, full int }
}

var testLeaveOut = []string{"node_modules", ".venv"}

// extraIgnore are the spec's [watch] ignore patterns, given to both.
var extraIgnore = []string{"*.tmp", "/scratch/"}

func newSession(t *testing.T, h *watch.Hub, dir string, c *Checkpointer) *session {
	t.Helper()
	w, err := h.Watch(dir, watch.Options{LeaveOut: testLeaveOut, Ignore: extraIgnore})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &session{t: t, dir: dir, c: c, w: w, req: TakeRequest{
		Dir: dir, SessionID: "s", MaxFileSize: 2048, Ignore: extraIgnore, FullEvery: -1, FullAfter: -1,
	}}
}

// take reads the watch's changes and checkpoints with them.
func (s *session) take(ctx context.Context) Result {
	s.t.Helper()
	ch, err := s.w.Changes(ctx, s.mark)
	if err != nil {
		s.t.Fatal(err)
	}
	req := s.req
	req.Changes = &Changes{Base: s.base, Paths: ch.Paths, Complete: ch.Complete, Incomplete: ch.Incomplete}
	res, err := s.c.Take(ctx, req)
	if err != nil {
		s.t.Fatalf("Take with changes %q: %v", ch.Paths, err)
	}
	s.mark, s.base = ch.Mark, res.Tree
	if res.Incremental {
		s.stats.incremental++
	} else {
		s.stats.full++
	}
	return res
}

func newHubT(t *testing.T) *watch.Hub {
	t.Helper()
	h, err := watch.NewHub(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestIncrementalMatchesFull applies random, seeded edit sequences to a git
// project and to a non-git one, and after each batch compares the tree of
// the incremental checkpoint (built from the watcher's record) with the
// tree a full scan of the same work tree gives. -short runs fewer.
func TestIncrementalMatchesFull(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	steps := 30
	if n, _ := strconv.Atoi(os.Getenv("CHECKPOINT_SEEDS")); n > 0 {
		seeds = nil
		for i := range n {
			seeds = append(seeds, uint64(100+i))
		}
	}
	if testing.Short() {
		seeds, steps = seeds[:2], 10
	}
	for _, kind := range []string{"git", "plain"} {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", kind, seed), func(t *testing.T) {
				runEdits(t, kind == "git", seed, steps)
			})
		}
	}
}

func runEdits(t *testing.T, isGit bool, seed uint64, steps int) {
	t.Setenv("TMPDIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "proj")
	e := &editor{t: t, dir: dir, rnd: rand.New(rand.NewPCG(seed, seed*7919)), git: isGit}
	e.setup()
	state := t.TempDir()
	opt := Options{StateDir: state, LeaveOut: testLeaveOut}
	h := newHubT(t)
	s := newSession(t, h, dir, New(opt))
	ref := New(opt) // a checkpointer of its own: never incremental
	refReq := s.req
	refReq.SessionID = "full"

	s.take(ctx)
	for step := range steps {
		var did []string
		for range 1 + e.rnd.IntN(4) {
			did = append(did, e.edit())
		}
		before := s.base
		got := s.take(ctx)
		if !got.Skipped {
			// The files the graft says changed are what git diff-tree says.
			diff, err := gitE(s.gitDir(), nil, "-c", "core.quotePath=false", "diff-tree", "-r", "--name-only", "--no-renames", before, got.Tree)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Files, "\n") != diff {
				t.Fatalf("seed %d step %d: Files = %q, git diff-tree says %q", seed, step, got.Files, diff)
			}
		}
		want, err := ref.Take(ctx, refReq)
		if err != nil {
			t.Fatal(err)
		}
		if want.Incremental {
			t.Fatal("the reference checkpoint was incremental")
		}
		if got.Tree != want.Tree {
			diff, _ := gitE(s.gitDir(), nil, "diff-tree", "-r", "--no-renames", want.Tree, got.Tree)
			t.Fatalf("seed %d step %d: after %q the checkpoint (incremental %v, %s) has tree %s, a full scan %s:\n%s",
				seed, step, did, got.Incremental, got.FullReason, got.Tree, want.Tree, diff)
		}
		if !got.Incremental {
			t.Logf("step %d full: %s (after %q)", step, got.FullReason, did)
		}
	}
	t.Logf("%d incremental, %d full checkpoints", s.stats.incremental, s.stats.full)
	if s.stats.incremental < steps/3 {
		t.Errorf("only %d of %d checkpoints were incremental", s.stats.incremental, steps+1)
	}
	h.Close()
	assertClean(t, dir)
}

func (s *session) gitDir() string {
	if _, err := os.Stat(filepath.Join(s.dir, ".git")); err == nil {
		return s.dir
	}
	id, _ := ProjectID(s.dir)
	return ShadowDir(s.c.opt.StateDir, id)
}

// editor makes random edits of a project.
type editor struct {
	t   *testing.T
	dir string
	rnd *rand.Rand
	git bool
	n   int
}

// names are chosen to sort around each other ("a" < "a-b" < "a.b" < "a/x").
var names = []string{"a", "a-b", "a.b", "b", "c d", "ü", "x0", "x"}

func (e *editor) setup() {
	t := e.t
	write(t, e.dir, ".gitignore", "*.log\nbuild/\n")
	write(t, e.dir, "README.md", "hello\n")
	write(t, e.dir, "a/x", "x\n")
	write(t, e.dir, "a-b", "sorts between a and a/\n")
	write(t, e.dir, "src/main.go", "package main\n")
	write(t, e.dir, "src/util/util.go", "package util\n")
	write(t, e.dir, "build/keep.txt", "tracked in an ignored dir\n")
	write(t, e.dir, "node_modules/vendored.js", "tracked in a left-out dir\n")
	write(t, e.dir, "node_modules/dep/index.js", "untracked\n")
	write(t, e.dir, "run.sh", "#!/bin/sh\n")
	must(t, os.Chmod(filepath.Join(e.dir, "run.sh"), 0o755))
	must(t, os.Symlink("README.md", filepath.Join(e.dir, "link")))
	// A nested repository with a commit: a gitlink in checkpoints.
	nested := filepath.Join(e.dir, "vendor", "lib")
	write(t, nested, "lib.go", "package lib\n")
	gitT(t, nested, "init", "-q")
	gitT(t, nested, "add", "-A")
	gitT(t, nested, "commit", "-q", "-m", "lib")
	if e.git {
		gitT(t, e.dir, "init", "-q")
		gitT(t, e.dir, "add", "-A")
		gitT(t, e.dir, "add", "-f", "build/keep.txt", "node_modules/vendored.js")
		gitT(t, e.dir, "commit", "-q", "-m", "first")
		write(t, e.dir, "x.log", "tracked and ignored\n")
		gitT(t, e.dir, "add", "-f", "x.log")
		gitT(t, e.dir, "commit", "-q", "-m", "second")
	}
}

// entries lists the project's files and directories (not .git, nor what
// is inside a nested repository).
func (e *editor) entries() (files, dirs []string) {
	filepath.WalkDir(e.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == e.dir {
			return nil
		}
		rel, _ := filepath.Rel(e.dir, p)
		rel = filepath.ToSlash(rel)
		if d.Name() == ".git" || strings.HasPrefix(rel, "vendor/lib") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			dirs = append(dirs, rel)
		} else {
			files = append(files, rel)
		}
		return nil
	})
	return files, dirs
}

func (e *editor) pick(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[e.rnd.IntN(len(list))]
}

func (e *editor) content() string {
	e.n++
	size := e.rnd.IntN(300)
	if e.rnd.IntN(6) == 0 {
		size = 1500 + e.rnd.IntN(1500) // around the 2048-byte limit
	}
	return fmt.Sprintf("%d\n%s", e.n, strings.Repeat("y", size))
}

func (e *editor) newPath(dirs []string) string {
	d := e.pick(append(dirs, "", "", "src", "new"))
	name := e.pick(names)
	if e.rnd.IntN(3) == 0 {
		name += fmt.Sprintf("%d", e.rnd.IntN(20))
	}
	if d == "" {
		return name
	}
	return d + "/" + name
}

func (e *editor) abs(rel string) string { return filepath.Join(e.dir, filepath.FromSlash(rel)) }

// write writes a file of the project, replacing whatever is in the way (a
// file where a directory must go, a directory where the file goes).
func (e *editor) write(rel, content string) { e.writeAt(e.dir, rel, content) }

func (e *editor) writeAt(dir, rel, content string) {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	for d := filepath.Dir(p); d != dir; d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err == nil && !fi.IsDir() {
			os.Remove(d)
		}
	}
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		os.RemoveAll(p)
	}
	must(e.t, os.MkdirAll(filepath.Dir(p), 0o755))
	os.Remove(p) // a symlink is replaced, not written through
	must(e.t, os.WriteFile(p, []byte(content), 0o644))
}

// edit makes one random edit and says what it did.
func (e *editor) edit() string {
	files, dirs := e.entries()
	f, d := e.pick(files), e.pick(dirs)
	switch op := e.rnd.IntN(22); {
	case op < 4 || f == "":
		p := e.newPath(dirs)
		os.RemoveAll(e.abs(p))
		e.write(p, e.content())
		return "add " + p
	case op < 8:
		os.Remove(e.abs(f))
		e.write(f, e.content())
		return "modify " + f
	case op < 9:
		os.Remove(e.abs(f))
		return "delete " + f
	case op < 10:
		to := e.newPath(dirs)
		os.RemoveAll(e.abs(to))
		os.MkdirAll(filepath.Dir(e.abs(to)), 0o755)
		if err := os.Rename(e.abs(f), e.abs(to)); err != nil {
			return "rename failed " + f
		}
		return "rename " + f + " -> " + to
	case op < 11:
		fi, err := os.Lstat(e.abs(f))
		if err != nil || !fi.Mode().IsRegular() {
			return "chmod skipped " + f
		}
		os.Chmod(e.abs(f), fi.Mode().Perm()^0o111)
		return "chmod " + f
	case op < 12:
		p := e.newPath(dirs)
		os.RemoveAll(e.abs(p))
		os.MkdirAll(filepath.Dir(e.abs(p)), 0o755)
		os.Symlink(e.pick(append(files, "nowhere")), e.abs(p))
		return "symlink " + p
	case op < 13 && d != "":
		os.RemoveAll(e.abs(d))
		e.write(d, e.content())
		return "dir to file " + d
	case op < 14:
		os.Remove(e.abs(f))
		e.write(f+"/inside", e.content())
		return "file to dir " + f
	case op < 15 && d != "":
		to := e.newPath(nil) + "-moved"
		os.RemoveAll(e.abs(to))
		if err := os.Rename(e.abs(d), e.abs(to)); err != nil {
			return "rename dir failed " + d
		}
		return "rename dir " + d + " -> " + to
	case op < 16 && d != "":
		os.RemoveAll(e.abs(d))
		return "delete dir " + d
	case op < 17:
		p := e.pick([]string{"debug.log", "build/out.o", "node_modules/dep/more.js", "x.tmp", "scratch/notes", "src/.venv/lib.py", "build/keep.txt", "node_modules/vendored.js"})
		e.write(p, e.content())
		return "ignored, left out or blind " + p
	case op < 18:
		pats := []string{"*.log\nbuild/\n", "*.log\nbuild/\nsrc/\n", "build/\n", "*.log\nbuild/\n!a/x\n*x*\n"}
		e.write(".gitignore", e.pick(pats))
		return ".gitignore"
	case op < 19:
		nested := filepath.Join(e.dir, "vendor", "lib")
		if _, err := os.Stat(filepath.Join(nested, ".git")); err != nil {
			return "no nested repository"
		}
		e.writeAt(nested, "lib.go", e.content())
		gitT(e.t, nested, "commit", "-q", "-am", "more")
		return "commit in the nested repository"
	case op < 20 && e.git:
		if e.rnd.IntN(2) == 0 {
			gitT(e.t, e.dir, "add", "-A")
			gitT(e.t, e.dir, "commit", "-q", "--allow-empty", "-m", "user commit")
			return "user commit"
		}
		gitE(e.dir, nil, "rm", "-q", "--cached", "--ignore-unmatch", f)
		return "git rm --cached " + f
	case op < 21:
		if e.rnd.IntN(2) == 0 {
			os.MkdirAll(e.abs(e.newPath(dirs)+"-empty"), 0o755)
			return "empty dir"
		}
		e.write(e.newPath(dirs)+"/deep/er/file", e.content())
		return "deep new dirs"
	default:
		os.Remove(e.abs(f))
		os.Symlink("README.md", e.abs(f))
		return "file to symlink " + f
	}
}

// A record the watcher says is incomplete (as after an inotify overflow)
// makes the checkpoint a full scan, and the tree is still right.
func TestIncompleteRecordFallsBackToFullScan(t *testing.T) {
	dir := newRepo(t)
	ctx := ctxT(t)
	s := newSession(t, newHubT(t), dir, newCheckpointer(t))
	first := s.take(ctx)
	if first.Incremental || first.FullReason == "" {
		t.Fatalf("first checkpoint = %+v, want a full one with a reason", first)
	}
	write(t, dir, "a.txt", "a\n")
	if res := s.take(ctx); !res.Incremental {
		t.Fatalf("second checkpoint not incremental: %s", res.FullReason)
	}
	// An incomplete record: nothing the watcher missed may be missed.
	write(t, dir, "b.txt", "b\n")
	write(t, dir, "unseen.txt", "the watcher missed this one\n")
	ch, err := s.w.Changes(ctx, s.mark)
	if err != nil {
		t.Fatal(err)
	}
	req := s.req
	req.Changes = &Changes{Base: s.base, Paths: []string{"b.txt"}, Complete: false, Incomplete: "events were lost (inotify queue overflow)"}
	res, err := s.c.Take(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Incremental || !strings.Contains(res.FullReason, "overflow") {
		t.Errorf("checkpoint with an incomplete record = incremental %v (%s), want a full scan", res.Incremental, res.FullReason)
	}
	if !contains(treeFiles(t, dir, res.Tree), "unseen.txt") {
		t.Error("the full scan missed unseen.txt")
	}
	s.mark, s.base = ch.Mark, res.Tree
	// And the next one builds on it again.
	write(t, dir, "c.txt", "c\n")
	if res := s.take(ctx); !res.Incremental {
		t.Errorf("checkpoint after the full scan not incremental: %s", res.FullReason)
	}
}

// Each reason for a full scan: the user's index changed, the record does
// not start at the last checkpoint, the rules changed, the periodic full
// scan.
func TestFullScanReasons(t *testing.T) {
	dir := newRepo(t)
	ctx := ctxT(t)
	s := newSession(t, newHubT(t), dir, newCheckpointer(t))
	s.take(ctx)
	step := func(name string, before func(), want string) {
		t.Helper()
		write(t, dir, "f.txt", name)
		if before != nil {
			before()
		}
		res := s.take(ctx)
		switch {
		case want == "" && !res.Incremental:
			t.Errorf("%s: full scan (%s), want incremental", name, res.FullReason)
		case want != "" && (res.Incremental || !strings.Contains(res.FullReason, want)):
			t.Errorf("%s: incremental %v, reason %q; want a full scan because %q", name, res.Incremental, res.FullReason, want)
		}
	}
	step("plain", nil, "")
	step("user index", func() { gitT(t, dir, "add", "f.txt") }, "index changed")
	step("after the index change", nil, "")
	step("wrong base", func() { s.base = "0000000000000000000000000000000000000000" }, "does not start at")
	step("after the wrong base", nil, "")
	step("size limit", func() { s.req.MaxFileSize = 4096 }, "size limit")
	step("extra pattern", func() { s.req.Ignore = []string{"*.bak"} }, "ignore rules")
	step("info/exclude", func() { write(t, dir, ".git/info/exclude", "*.swp\n") }, "info/exclude")
	step("after info/exclude", nil, "")
	s.req.FullEvery = 2 // one incremental checkpoint since the full scan
	step("two", nil, "")
	step("every 2", nil, "2 incremental checkpoints")
	step("after every 2", nil, "")
	s.req.FullEvery, s.req.FullAfter = -1, time.Nanosecond
	step("after", nil, "the last full scan was")
}

// One ignore policy: a write in node_modules (not in .gitignore) is
// neither reported by the watcher nor in a checkpoint; a file next to it is
// in both.
func TestLeftOutDirectoryAgrees(t *testing.T) {
	dir := newRepo(t)
	ctx := ctxT(t)
	s := newSession(t, newHubT(t), dir, New(Options{StateDir: t.TempDir(), LeaveOut: testLeaveOut}))
	s.take(ctx)
	write(t, dir, "node_modules/pkg/junk.js", "x\n")
	write(t, dir, "src/app.js", "real work\n")
	res := s.take(ctx)
	st := s.w.Stats()
	if !slices.Equal(st.FilesChanged, []string{"src/app.js"}) || st.LastFileEdited != "src/app.js" {
		t.Errorf("watcher: files changed %q, last edited %q; want only src/app.js", st.FilesChanged, st.LastFileEdited)
	}
	files := treeFiles(t, dir, res.Tree)
	if contains(files, "node_modules/pkg/junk.js") || !contains(files, "src/app.js") {
		t.Errorf("checkpoint files %q: want src/app.js and nothing of node_modules", files)
	}
	if !slices.Contains(res.LeftOut, "node_modules/") {
		t.Errorf("LeftOut = %q, want node_modules/", res.LeftOut)
	}
	if !slices.Equal(res.Files, []string{"src/app.js"}) {
		t.Errorf("Files = %q, want [src/app.js]", res.Files)
	}
}
