package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sessiond/sessiond/ipc/format"
)

func TestTakeLeavesUserStateAlone(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)

	// A stash entry, a staged change, an unstaged change on top of it, an
	// untracked file and ignored files.
	write(t, dir, "README.md", "stashed\n")
	gitT(t, dir, "stash", "-q")
	write(t, dir, "src/main.go", "package main // staged\n")
	gitT(t, dir, "add", "src/main.go")
	write(t, dir, "src/main.go", "package main // staged, then edited\n")
	write(t, dir, "notes.txt", "untracked\n")
	write(t, dir, "debug.log", "ignored\n")
	write(t, dir, "build/out.bin", "ignored too\n")
	// A hook that would show if any hook ran.
	hook := filepath.Join(dir, ".git", "hooks", "post-index-change")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch \"$GIT_DIR/../HOOK_RAN\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := userState(t, dir)

	var last Result
	for i := range 6 {
		write(t, dir, fmt.Sprintf("gen/file%d.txt", i), fmt.Sprintf("round %d\n", i))
		res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s1", Mode: ModeRef, Message: fmt.Sprintf("round %d", i)})
		if err != nil {
			t.Fatalf("Take %d: %v", i, err)
		}
		if res.Skipped {
			t.Fatalf("Take %d: skipped, want a checkpoint", i)
		}
		if got := userState(t, dir); got != before {
			t.Fatalf("Take %d changed the user's repository:\n got %s\nwant %s", i, got, before)
		}
		assertClean(t, dir)
		if i > 0 {
			if got := gitT(t, dir, "rev-parse", res.ID+"^"); got != last.ID {
				t.Errorf("Take %d: parent %s, want previous checkpoint %s", i, got, last.ID)
			}
			if res.FilesChanged != 1 || !slices.Equal(res.Files, []string{fmt.Sprintf("gen/file%d.txt", i)}) {
				t.Errorf("Take %d: files %d %v, want just gen/file%d.txt", i, res.FilesChanged, res.Files, i)
			}
		}
		last = res
	}
	if exists(dir, "HOOK_RAN") {
		t.Error("a hook ran during a checkpoint")
	}
	if got := gitT(t, dir, "rev-parse", RefPrefix+"s1"); got != last.ID {
		t.Errorf("ref at %s, want %s", got, last.ID)
	}
	files := treeFiles(t, dir, last.Tree)
	for _, want := range []string{"notes.txt", "src/main.go", "gen/file5.txt", ".gitignore", "docs/guide.md"} {
		if !contains(files, want) {
			t.Errorf("checkpoint lacks %s; has %v", want, files)
		}
	}
	for _, unwanted := range []string{"debug.log", "build/out.bin"} {
		if contains(files, unwanted) {
			t.Errorf("checkpoint has ignored file %s", unwanted)
		}
	}
	if got := blob(t, dir, last.ID, "src/main.go"); got != "package main // staged, then edited" {
		t.Errorf("src/main.go in checkpoint = %q, want the work tree's version", got)
	}
	// The first checkpoint's parent is HEAD.
	first := gitT(t, dir, "rev-list", "--max-parents=0", "--first-parent", RefPrefix+"s1", "--not", "HEAD")
	_ = first
	root := gitT(t, dir, "rev-list", "--reverse", RefPrefix+"s1", "--not", "HEAD")
	oldest := strings.Split(root, "\n")[0]
	if got, want := gitT(t, dir, "rev-parse", oldest+"^"), gitT(t, dir, "rev-parse", "HEAD"); got != want {
		t.Errorf("first checkpoint's parent %s, want HEAD %s", got, want)
	}
	if reflog := gitT(t, dir, "reflog", "show", "--format=%H", RefPrefix+"s1"); len(strings.Split(reflog, "\n")) != 6 {
		t.Errorf("reflog of the checkpoint ref has %q, want 6 entries", reflog)
	}
	msg := gitT(t, dir, "log", "-1", "--format=%B", last.ID)
	for _, want := range []string{"Checkpoint: 1 file changed: gen/file5.txt\n", "round 5", "Sessiond-Session: s1", "Sessiond-File: gen/file5.txt"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestSkippedWhenUnchanged(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	write(t, dir, "a.txt", "a\n")
	first, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef})
	if err != nil {
		t.Fatal(err)
	}
	if !second.Skipped || second.ID != first.ID || second.Tree != first.Tree {
		t.Errorf("second Take = %+v, want skipped at %s", second, first.ID)
	}
	if got := gitT(t, dir, "rev-list", "--count", RefPrefix+"s", "--not", "HEAD"); got != "1" {
		t.Errorf("%s checkpoints on the ref, want 1", got)
	}
	assertClean(t, dir)
}

func TestFilesChanged(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	write(t, dir, "README.md", "changed\n")
	write(t, dir, "new.txt", "new\n")
	if err := os.Remove(filepath.Join(dir, "docs/guide.md")); err != nil {
		t.Fatal(err)
	}
	res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"README.md", "docs/guide.md", "new.txt"}
	if res.FilesChanged != 3 || !slices.Equal(res.Files, want) {
		t.Errorf("files %d %v, want 3 %v", res.FilesChanged, res.Files, want)
	}
	cps, err := c.List(ctx, ListRequest{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 1 || cps[0].FilesChanged != 3 || cps[0].ID != res.ID || cps[0].SessionID != "s" || cps[0].Ref != RefPrefix+"s" || !cps[0].Time.Equal(res.Time) {
		t.Errorf("List = %+v, want the one checkpoint %+v", cps, res)
	}
}

func TestLeftOut(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	big, err := os.Create(filepath.Join(dir, "data.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(11 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	write(t, dir, "small.bin", "small\n")
	write(t, dir, "node_modules/left-pad/index.js", "module.exports = 1\n")
	write(t, dir, "web/node_modules/react/index.js", "x\n")
	write(t, dir, "py/.venv/bin/python", "x\n")
	// A tracked vendor directory named like a heavy one: its tracked files
	// stay in, only its new untracked files are left out.
	write(t, dir, "rs/target/keep.txt", "tracked\n")
	gitT(t, dir, "add", "-f", "rs/target/keep.txt")
	gitT(t, dir, "commit", "-q", "-m", "vendor")
	write(t, dir, "rs/target/keep.txt", "tracked, changed\n")
	write(t, dir, "rs/target/debug/huge.o", "build output\n")
	write(t, dir, "rs/target/loose.o", "build output\n")
	// A new, wholly untracked project with heavy content inside, some of it
	// ignored by its own .gitignore.
	write(t, dir, "newproj/main.go", "package main\n")
	write(t, dir, "newproj/.gitignore", "ignoredstuff/\n")
	write(t, dir, "newproj/node_modules/x.js", "x\n")
	write(t, dir, "newproj/ignoredstuff/node_modules/y.js", "y\n")
	if err := os.Truncate(filepath.Join(dir, "data.bin"), 11<<20); err != nil {
		t.Fatal(err)
	}
	iso, err := os.Create(filepath.Join(dir, "newproj", "big.iso"))
	if err != nil {
		t.Fatal(err)
	}
	iso.Truncate(12 << 20)
	iso.Close()

	res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"data.bin", "newproj/big.iso", "newproj/node_modules/", "node_modules/", "py/.venv/", "rs/target/", "web/node_modules/"}
	if !slices.Equal(res.LeftOut, want) {
		t.Errorf("LeftOut = %v, want %v", res.LeftOut, want)
	}
	files := treeFiles(t, dir, res.Tree)
	for _, p := range []string{"data.bin", "node_modules/left-pad/index.js", "web/node_modules/react/index.js", "py/.venv/bin/python", "rs/target/debug/huge.o", "rs/target/loose.o", "newproj/big.iso", "newproj/node_modules/x.js", "newproj/ignoredstuff/node_modules/y.js"} {
		if contains(files, p) {
			t.Errorf("checkpoint has left-out %s", p)
		}
	}
	for _, p := range []string{"small.bin", "newproj/main.go", "newproj/.gitignore"} {
		if !contains(files, p) {
			t.Errorf("checkpoint lacks %s", p)
		}
	}
	if got := blob(t, dir, res.Tree, "rs/target/keep.txt"); got != "tracked, changed" {
		t.Errorf("tracked rs/target/keep.txt = %q in the checkpoint, want the changed version", got)
	}
	assertClean(t, dir)
}

func TestRestoreRoundTrip(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	write(t, dir, "src/main.go", "package main // v1\n")
	write(t, dir, "x/y.txt", "y\n")
	write(t, dir, "flip", "a file\n")
	cp, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef, Message: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	before := userState(t, dir)

	// Modify, add, delete, turn a file into a directory and back, and add an
	// ignored file.
	write(t, dir, "src/main.go", "package main // v2\n")
	write(t, dir, "added/new.txt", "new\n")
	os.Remove(filepath.Join(dir, "README.md"))
	os.RemoveAll(filepath.Join(dir, "x"))
	write(t, dir, "x", "now a file\n")
	os.Remove(filepath.Join(dir, "flip"))
	write(t, dir, "flip/inner.txt", "now a dir\n")
	write(t, dir, "app.log", "ignored\n")
	write(t, dir, "build/cache", "ignored\n")

	saved, restored, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: cp.ID[:8]})
	if err != nil {
		t.Fatal(err)
	}
	if restored.ID != cp.ID || restored.SessionID != "s" || restored.Message != "v1" {
		t.Errorf("restored %+v, want checkpoint %s", restored, cp.ID)
	}
	if saved.Skipped || saved.Ref != RefPrefix+RestoreSession {
		t.Errorf("saved %+v, want a new checkpoint on the restore ref", saved)
	}
	if got := userState(t, dir); got != before {
		t.Fatalf("Restore changed the user's repository:\n got %s\nwant %s", got, before)
	}
	// The work tree now checkpoints to the very same tree.
	again, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "verify", Mode: ModeRef})
	if err != nil {
		t.Fatal(err)
	}
	if again.Tree != cp.Tree {
		t.Errorf("work tree after restore is tree %s (%v), want %s", again.Tree, treeFiles(t, dir, again.Tree), cp.Tree)
	}
	if exists(dir, "added") {
		t.Error("added/ survived the restore")
	}
	if got := read(t, dir, "app.log"); got != "ignored\n" {
		t.Errorf("ignored app.log = %q after restore", got)
	}
	if !exists(dir, "build/cache") {
		t.Error("ignored build/cache removed by the restore")
	}
	if got := read(t, dir, "src/main.go"); got != "package main // v1\n" {
		t.Errorf("src/main.go = %q", got)
	}
	assertClean(t, dir)

	// And back to the state before the restore.
	if _, _, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: saved.ID}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, dir, "flip/inner.txt"); got != "now a dir\n" {
		t.Errorf("flip/inner.txt = %q after restoring the saved state", got)
	}
	if exists(dir, "README.md") {
		t.Error("README.md is back after restoring the state without it")
	}

	_, _, err = c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: "deadbeef"})
	if !errors.Is(err, ErrUnknownCheckpoint) {
		t.Errorf("Restore(deadbeef) = %v, want ErrUnknownCheckpoint", err)
	}
	_, _, err = c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: "HEAD"})
	if !errors.Is(err, ErrUnknownCheckpoint) {
		t.Errorf("Restore(HEAD) = %v, want ErrUnknownCheckpoint", err)
	}
}

func TestFind(t *testing.T) {
	cps := []Checkpoint{{Checkpoint: format.Checkpoint{ID: "abcd1234"}}, {Checkpoint: format.Checkpoint{ID: "abcd5678"}}, {Checkpoint: format.Checkpoint{ID: "ffff0000", FormerIDs: []string{"0123aaaa"}}}}
	tests := []struct {
		prefix string
		want   string
		err    error
	}{
		{"abcd1", "abcd1234", nil},
		{"ABCD5", "abcd5678", nil},
		{"abcd", "", ErrAmbiguousCheckpoint},
		{"0123a", "ffff0000", nil},
		{"abc", "", ErrUnknownCheckpoint},
		{"zzzz", "", ErrUnknownCheckpoint},
		{"eeee", "", ErrUnknownCheckpoint},
	}
	for _, tt := range tests {
		got, err := find(cps, tt.prefix)
		if !errors.Is(err, tt.err) || got.Checkpoint.ID != tt.want {
			t.Errorf("find(%q) = %q, %v; want %q, %v", tt.prefix, got.Checkpoint.ID, err, tt.want, tt.err)
		}
	}
}

func TestNonGitProject(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	project := filepath.Join(t.TempDir(), "plain")
	write(t, project, "a.txt", "a\n")
	write(t, project, "sub/b.txt", "b\n")
	write(t, project, ".gitignore", "*.tmp\n")
	write(t, project, "x.tmp", "ignored\n")
	write(t, project, ".sessiond/handoff.json", "{}\n")
	state := t.TempDir()
	c := New(Options{StateDir: state})
	ctx := ctxT(t)

	if cps, err := c.List(ctx, ListRequest{Dir: project}); err != nil || len(cps) != 0 {
		t.Fatalf("List before any checkpoint = %v, %v", cps, err)
	}
	id, _ := ProjectID(project)
	shadow := ShadowDir(state, id)
	if exists(shadow, ".") {
		t.Fatal("List created the shadow repository")
	}
	before := listing(t, project)
	first, err := c.Take(ctx, TakeRequest{Dir: project, SessionID: "s", Mode: ModeRef, Message: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if got := listing(t, project); !slices.Equal(got, before) {
		t.Errorf("Take changed the project:\n got %v\nwant %v", got, before)
	}
	if !exists(shadow, "HEAD") {
		t.Errorf("no shadow repository at %s", shadow)
	}
	files := treeFiles(t, shadow, first.Tree)
	if want := []string{".gitignore", "a.txt", "sub/b.txt"}; !slices.Equal(files, want) {
		t.Errorf("checkpoint files %v, want %v", files, want)
	}
	if first.FilesChanged != 3 {
		t.Errorf("FilesChanged = %d, want 3", first.FilesChanged)
	}
	// Commit mode has no branch to commit on: it checkpoints to the ref.
	write(t, project, "a.txt", "a2\n")
	second, err := c.Take(ctx, TakeRequest{Dir: project, SessionID: "s", Mode: ModeCommit})
	if err != nil {
		t.Fatal(err)
	}
	if second.Skipped || second.Ref != RefPrefix+"s" || second.FilesChanged != 1 {
		t.Errorf("second = %+v", second)
	}
	if again, err := c.Take(ctx, TakeRequest{Dir: project, SessionID: "s", Mode: ModeRef}); err != nil || !again.Skipped {
		t.Errorf("unchanged Take = %+v, %v; want skipped", again, err)
	}
	cps, err := c.List(ctx, ListRequest{Dir: project})
	if err != nil || len(cps) != 2 || cps[0].ID != second.ID {
		t.Fatalf("List = %+v, %v; want 2 checkpoints, newest first", cps, err)
	}
	write(t, project, "c.txt", "c\n")
	if _, _, err := c.Restore(ctx, RestoreRequest{Dir: project, Checkpoint: first.ID}); err != nil {
		t.Fatal(err)
	}
	if exists(project, "c.txt") || read(t, project, "a.txt") != "a\n" || read(t, project, "x.tmp") != "ignored\n" {
		t.Error("restore in a non-git project did not give back the first checkpoint")
	}
	if exists(project, ".git") {
		t.Error("a .git appeared in the project")
	}
	f, err := Facts(ctx, FactsRequest{Dir: project})
	if err != nil || f.IsRepo {
		t.Errorf("Facts = %+v, %v; want IsRepo false", f, err)
	}
	ents, _ := os.ReadDir(shadow)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "sessiond-") {
			t.Errorf("temporary %s left in the shadow repository", e.Name())
		}
	}
	// What the shadow repository holds is its owner's alone.
	filepath.Walk(shadow, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want no rights for group or others", p, fi.Mode().Perm())
		}
		return nil
	})
	assertClean(t, project)
}

func TestNonGitWithoutStateDir(t *testing.T) {
	project := t.TempDir()
	_, err := New(Options{}).Take(ctxT(t), TakeRequest{Dir: project, SessionID: "s", Mode: ModeRef})
	if !errors.Is(err, ErrNoStateDir) {
		t.Errorf("Take = %v, want ErrNoStateDir", err)
	}
}

func TestMergeInProgress(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	gitT(t, dir, "checkout", "-q", "-b", "other")
	write(t, dir, "README.md", "other\n")
	gitT(t, dir, "commit", "-q", "-am", "other")
	gitT(t, dir, "checkout", "-q", "main")
	write(t, dir, "README.md", "main\n")
	gitT(t, dir, "commit", "-q", "-am", "main")
	if _, err := gitE(dir, nil, "merge", "-q", "other"); err == nil {
		t.Fatal("merge did not conflict")
	}
	before := userState(t, dir)
	if !strings.Contains(before, "MERGE_HEAD") {
		t.Fatal("no merge in progress")
	}
	res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef})
	if err != nil {
		t.Fatalf("ref checkpoint during a merge: %v", err)
	}
	if !strings.Contains(blob(t, dir, res.Tree, "README.md"), "<<<<<<<") {
		t.Error("checkpoint lacks the conflicted work-tree file")
	}
	if got := userState(t, dir); got != before {
		t.Errorf("checkpoint changed the repository in a merge:\n got %s\nwant %s", got, before)
	}
	_, err = c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeCommit})
	if !errors.Is(err, ErrInProgress) {
		t.Errorf("commit checkpoint during a merge = %v, want ErrInProgress", err)
	}
	if got := userState(t, dir); got != before {
		t.Errorf("refused commit checkpoint changed the repository:\n got %s\nwant %s", got, before)
	}
	assertClean(t, dir)
}

func TestDetachedHead(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	gitT(t, dir, "checkout", "-q", "--detach", "HEAD~1")
	write(t, dir, "wip.txt", "wip\n")
	before := userState(t, dir)
	res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gitT(t, dir, "rev-parse", res.ID+"^"), gitT(t, dir, "rev-parse", "HEAD"); got != want {
		t.Errorf("parent %s, want detached HEAD %s", got, want)
	}
	if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s2", Mode: ModeCommit}); !errors.Is(err, ErrDetached) {
		t.Errorf("commit mode on a detached HEAD = %v, want ErrDetached", err)
	}
	if got := userState(t, dir); got != before {
		t.Errorf("repository changed:\n got %s\nwant %s", got, before)
	}
	f, err := Facts(ctx, FactsRequest{Dir: dir})
	if err != nil || f.Branch != "" || f.Head == "" || !f.IsRepo {
		t.Errorf("Facts = %+v, %v; want a head and no branch", f, err)
	}
}

func TestUnbornBranch(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	gitT(t, dir, "init", "-q")
	write(t, dir, "a.txt", "a\n")
	c := newCheckpointer(t)
	ctx := ctxT(t)
	before := userState(t, dir)
	res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef})
	if err != nil {
		t.Fatal(err)
	}
	if got := userState(t, dir); got != before {
		t.Errorf("repository changed:\n got %s\nwant %s", got, before)
	}
	if got := gitT(t, dir, "log", "--format=%P", "-1", res.ID); got != "" {
		t.Errorf("first checkpoint of an unborn branch has parents %q", got)
	}
	if res.FilesChanged != 1 {
		t.Errorf("FilesChanged = %d, want 1", res.FilesChanged)
	}
	// With something staged (the index file now exists).
	write(t, dir, "b.txt", "b\n")
	gitT(t, dir, "add", "b.txt")
	before = userState(t, dir)
	if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef}); err != nil {
		t.Fatal(err)
	}
	if got := userState(t, dir); got != before {
		t.Errorf("repository changed:\n got %s\nwant %s", got, before)
	}
	f, err := Facts(ctx, FactsRequest{Dir: dir})
	if err != nil || f.Head != "" || f.Branch != "main" || len(f.GitLog) != 0 {
		t.Errorf("Facts = %+v, %v; want unborn main", f, err)
	}
	if !slices.Equal(f.Uncommitted, []string{"b.txt", "a.txt"}) {
		t.Errorf("Uncommitted = %q", f.Uncommitted)
	}
	// Commit mode makes the root commit.
	cr, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeCommit, Message: "wip"})
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != cr.ID || cr.FilesChanged != 2 {
		t.Errorf("commit mode on unborn: HEAD %s, result %+v", got, cr)
	}
	assertClean(t, dir)
}

func TestCorruptIndex(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	garbage := []byte("DIRC this is not an index \x00\x01\x02 at all, at all, at all")
	index := filepath.Join(dir, ".git", "index")
	if err := os.WriteFile(index, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{ModeRef, ModeCommit} {
		_, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: mode})
		if !errors.Is(err, ErrCorruptIndex) {
			t.Errorf("Take(%s) with a corrupt index = %v, want ErrCorruptIndex", mode, err)
		}
		if got, _ := os.ReadFile(index); string(got) != string(garbage) {
			t.Errorf("Take(%s) changed the corrupt index", mode)
		}
		assertClean(t, dir)
	}
	if _, err := gitE(dir, nil, "rev-parse", "-q", "--verify", RefPrefix+"s"); err == nil {
		t.Error("a checkpoint ref was made from a corrupt index")
	}
}

func TestNoGit(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	t.Setenv("PATH", t.TempDir())
	if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef}); !errors.Is(err, ErrNoGit) {
		t.Errorf("Take = %v, want ErrNoGit", err)
	}
	if _, err := c.List(ctx, ListRequest{Dir: dir}); !errors.Is(err, ErrNoGit) {
		t.Errorf("List = %v, want ErrNoGit", err)
	}
	if _, _, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: "abcd"}); !errors.Is(err, ErrNoGit) {
		t.Errorf("Restore = %v, want ErrNoGit", err)
	}
	if _, err := Facts(ctx, FactsRequest{Dir: dir}); !errors.Is(err, ErrNoGit) {
		t.Errorf("Facts = %v, want ErrNoGit", err)
	}
}

func TestBadInput(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	for _, id := range []string{"", "a/b", "..", "a..b", "x.lock", "-x", "a b", "a:b", "a~1"} {
		if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: id, Mode: ModeRef}); !errors.Is(err, ErrBadSessionID) {
			t.Errorf("Take(session %q) = %v, want ErrBadSessionID", id, err)
		}
	}
	if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: "push"}); !errors.Is(err, ErrBadMode) {
		t.Errorf("Take(mode push) = %v, want ErrBadMode", err)
	}
	if _, err := c.Take(ctx, TakeRequest{Dir: filepath.Join(dir, "nope"), SessionID: "s", Mode: ModeRef}); err == nil {
		t.Error("Take of a missing dir succeeded")
	}
	if _, err := c.Take(ctx, TakeRequest{Dir: filepath.Join(dir, ".git"), SessionID: "s", Mode: ModeRef}); !errors.Is(err, ErrNotWorkTree) {
		t.Errorf("Take inside .git = %v, want ErrNotWorkTree", err)
	}
	// A .git that git does not accept is not silently shadowed.
	broken := t.TempDir()
	write(t, broken, ".git", "gitdir: /nonexistent\n")
	if _, err := c.Take(ctx, TakeRequest{Dir: broken, SessionID: "s", Mode: ModeRef}); !errors.Is(err, ErrNotWorkTree) {
		t.Errorf("Take with a broken .git = %v, want ErrNotWorkTree", err)
	}
	// A subdirectory checkpoints the whole repository.
	write(t, dir, "README.md", "from a subdir\n")
	res, err := c.Take(ctx, TakeRequest{Dir: filepath.Join(dir, "src"), SessionID: "sub", Mode: ModeRef})
	if err != nil || !slices.Equal(res.Files, []string{"README.md"}) {
		t.Errorf("Take from a subdir = %+v, %v", res, err)
	}
}

func TestModeCommit(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho no >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := gitT(t, dir, "rev-parse", "HEAD")
	write(t, dir, "README.md", "wip\n")
	write(t, dir, "new.txt", "new\n")
	write(t, dir, "node_modules/x/index.js", "x\n")
	res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeCommit, Message: "interrupted"})
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD"); got != res.ID || res.Ref != "refs/heads/main" {
		t.Errorf("HEAD %s, result %+v", got, res)
	}
	if got := gitT(t, dir, "rev-parse", "HEAD^"); got != head {
		t.Errorf("parent %s, want the old HEAD %s", got, head)
	}
	if res.FilesChanged != 2 || !slices.Equal(res.LeftOut, []string{"node_modules/"}) {
		t.Errorf("result %+v, want 2 files and node_modules left out", res)
	}
	if st := gitT(t, dir, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("after a commit checkpoint, status = %q", st)
	}
	if msg := gitT(t, dir, "log", "-1", "--format=%B"); !strings.Contains(msg, "interrupted") || !strings.HasPrefix(msg, "WIP checkpoint: 2 files changed: README.md, new.txt\n") {
		t.Errorf("message %q", msg)
	}
	again, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeCommit})
	if err != nil || !again.Skipped || again.ID != res.ID {
		t.Errorf("unchanged commit checkpoint = %+v, %v; want skipped", again, err)
	}
	// A stale index.lock stops mode commit with a clear error, and leaves
	// ref mode alone (it never takes the user's index lock).
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "README.md", "more\n")
	if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeCommit}); !errors.Is(err, ErrIndexLocked) {
		t.Errorf("commit checkpoint with index.lock = %v, want ErrIndexLocked", err)
	}
	if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef}); err != nil {
		t.Errorf("ref checkpoint with index.lock = %v", err)
	}
	f, err := Facts(ctx, FactsRequest{Dir: dir})
	if err != nil || !f.IndexLock {
		t.Errorf("Facts = %+v, %v; want IndexLock", f, err)
	}
}

func TestPrune(t *testing.T) {
	dir := newRepo(t)
	c := New(Options{StateDir: t.TempDir(), Keep: 4})
	ctx := ctxT(t)
	var all []Result
	for i := range 5 {
		write(t, dir, fmt.Sprintf("f%d.txt", i), "x\n")
		res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef, Message: fmt.Sprintf("n%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res)
	}
	write(t, dir, "other.txt", "x\n")
	if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "t", Mode: ModeRef}); err != nil {
		t.Fatal(err)
	}
	// 5 ≤ 4 + 1: no automatic prune yet.
	if n := len(sessionCheckpoints(t, c, dir, "s")); n != 5 {
		t.Fatalf("%d checkpoints before prune, want 5", n)
	}
	removed, err := c.Prune(ctx, PruneRequest{Dir: dir, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	if removed != 3 {
		t.Errorf("Prune removed %d, want 3", removed)
	}
	kept := sessionCheckpoints(t, c, dir, "s")
	if len(kept) != 2 || len(sessionCheckpoints(t, c, dir, "t")) != 1 {
		t.Fatalf("after prune: %+v", kept)
	}
	if kept[0].tree != all[4].Tree || kept[1].tree != all[3].Tree {
		t.Error("kept checkpoints changed trees")
	}
	if kept[1].FilesChanged != 4 || kept[0].FilesChanged != 1 || kept[1].Message != "n3" {
		t.Errorf("folded checkpoint %+v, want 4 files changed (f0..f3)", kept[1])
	}
	if got, want := gitT(t, dir, "rev-parse", kept[1].ID+"^"), gitT(t, dir, "rev-parse", "HEAD"); got != want {
		t.Errorf("oldest kept checkpoint's parent %s, want the base %s", got, want)
	}
	if !kept[1].Time.Equal(all[3].Time) {
		t.Errorf("time %v, want %v", kept[1].Time, all[3].Time)
	}
	// Everything the ref reaches is complete.
	gitT(t, dir, "rev-list", "--objects", RefPrefix+"s")
	gitT(t, dir, "fsck", "--no-dangling", "--no-progress")
	// Old ids still restore.
	if _, restored, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: all[3].ID[:10]}); err != nil || restored.ID != kept[1].ID {
		t.Errorf("Restore by pre-prune id = %+v, %v; want %s", restored, err, kept[1].ID)
	}
	// A folded checkpoint's commit is still in the ref's reflog: it
	// restores, to its own state.
	if _, restored, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: all[0].ID}); err != nil || restored.ID != all[0].ID || restored.tree != all[0].Tree {
		t.Errorf("Restore of a folded checkpoint = %+v, %v; want its own state", restored, err)
	}
	if n, err := c.Prune(ctx, PruneRequest{Dir: dir, Keep: 2}); err != nil || n != 0 {
		t.Errorf("second Prune = %d, %v; want 0", n, err)
	}

	// Automatic: Keep 4, folded once a ref holds more than 5.
	for i := range 7 {
		write(t, dir, fmt.Sprintf("g%d.txt", i), "x\n")
		if _, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "auto", Mode: ModeRef}); err != nil {
			t.Fatal(err)
		}
	}
	// Depth 6 > 5 folds to 4, then one more: 5.
	cps := sessionCheckpoints(t, c, dir, "auto")
	if len(cps) != 5 {
		t.Errorf("%d checkpoints of session auto, want 5", len(cps))
	}
	if tip := gitT(t, dir, "rev-parse", RefPrefix+"auto"); tip != cps[0].ID {
		t.Errorf("ref at %s, newest listed %s", tip, cps[0].ID)
	}
}

func sessionCheckpoints(t *testing.T, c *Checkpointer, dir, session string) []Checkpoint {
	t.Helper()
	cps, err := c.List(ctxT(t), ListRequest{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var out []Checkpoint
	for _, cp := range cps {
		if cp.SessionID == session {
			out = append(out, cp)
		}
	}
	return out
}

func TestListAcrossSessions(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	var ids []string
	for i := range 6 {
		write(t, dir, "f.txt", fmt.Sprint(i))
		res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: fmt.Sprintf("s%d", i%3), Mode: ModeRef})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	// A branch of the user's and a commit on it are not checkpoints.
	write(t, dir, "f.txt", "committed")
	gitT(t, dir, "add", "f.txt")
	gitT(t, dir, "commit", "-qm", "user commit")
	cps, err := c.List(ctx, ListRequest{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 6 {
		t.Fatalf("List has %d checkpoints, want 6: %+v", len(cps), cps)
	}
	got := map[string]bool{}
	for i, cp := range cps {
		got[cp.ID] = true
		if i > 0 && cp.Time.After(cps[i-1].Time) {
			t.Errorf("not newest first: %v after %v", cp.Time, cps[i-1].Time)
		}
		if cp.Ref != RefPrefix+cp.SessionID {
			t.Errorf("checkpoint %s: ref %s, session %s", cp.ID, cp.Ref, cp.SessionID)
		}
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("checkpoint %s not listed", id)
		}
	}
	b, err := json.Marshal(cps[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"files", "files_changed", "id", "message", "ref", "session_id", "summary", "time"}; !slices.Equal(keys, want) {
		t.Errorf("JSON keys %v, want %v", keys, want)
	}
}

func TestWorktree(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, dir, "worktree", "add", "-q", "-b", "feature", wt)
	write(t, wt, "feature.txt", "in the worktree\n")
	gitT(t, wt, "add", "feature.txt")
	write(t, wt, "loose.txt", "untracked\n")
	mainBefore, wtBefore := userState(t, dir), userState(t, wt)
	res, err := c.Take(ctx, TakeRequest{Dir: wt, SessionID: "w", Mode: ModeRef})
	if err != nil {
		t.Fatal(err)
	}
	if got := userState(t, dir); got != mainBefore {
		t.Errorf("main work tree changed:\n got %s\nwant %s", got, mainBefore)
	}
	if got := userState(t, wt); got != wtBefore {
		t.Errorf("linked work tree changed:\n got %s\nwant %s", got, wtBefore)
	}
	files := treeFiles(t, dir, res.Tree)
	if !contains(files, "feature.txt") || !contains(files, "loose.txt") {
		t.Errorf("worktree checkpoint files %v", files)
	}
	// The checkpoint is listed from either work tree (refs are shared).
	for _, d := range []string{dir, wt} {
		if cps, err := c.List(ctx, ListRequest{Dir: d}); err != nil || len(cps) != 1 {
			t.Errorf("List(%s) = %v, %v", d, cps, err)
		}
	}
	assertClean(t, wt)
}

func TestConcurrentTakes(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	before := userState(t, dir)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: fmt.Sprintf("c%d", i%4), Mode: ModeRef})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := userState(t, dir); got != before {
		t.Errorf("repository changed:\n got %s\nwant %s", got, before)
	}
	if cps, _ := c.List(ctx, ListRequest{Dir: dir}); len(cps) != 4 {
		t.Errorf("%d checkpoints, want 4 (one per session; repeats skipped)", len(cps))
	}
}

func TestFacts(t *testing.T) {
	dir := newRepo(t)
	ctx := ctxT(t)
	write(t, dir, "README.md", "changed\n")
	write(t, dir, "untracked.txt", "u\n")
	write(t, dir, "ignored.log", "i\n")
	gitT(t, dir, "mv", "docs/guide.md", "docs/manual.md")
	f, err := Facts(ctx, FactsRequest{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !f.IsRepo || f.Branch != "main" || f.Head != gitT(t, dir, "rev-parse", "HEAD") || f.IndexLock {
		t.Errorf("Facts = %+v", f)
	}
	want := []string{"docs/manual.md", "README.md", "untracked.txt"}
	got := slices.Clone(f.Uncommitted)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Uncommitted = %q, want %q", f.Uncommitted, want)
	}
	if len(f.GitLog) != 2 || !strings.HasSuffix(f.GitLog[0], " second") {
		t.Errorf("GitLog = %q", f.GitLog)
	}
	// From a subdirectory, paths are still relative to the top.
	f2, err := Facts(ctx, FactsRequest{Dir: filepath.Join(dir, "src")})
	if err != nil || !slices.Equal(f2.Uncommitted, f.Uncommitted) {
		t.Errorf("Facts from a subdir = %+v, %v", f2, err)
	}
	nonRepo, err := Facts(ctx, FactsRequest{Dir: t.TempDir()})
	if err != nil || nonRepo.IsRepo {
		t.Errorf("Facts of a plain dir = %+v, %v", nonRepo, err)
	}
}

func TestParseMessage(t *testing.T) {
	m := message{subject: "s", body: "line one\n\nline two", trailers: [][2]string{{trailerSession, "x"}, {trailerFiles, "3"}}}
	got := parseMessage(m.String())
	if got.subject != "s" || got.body != m.body || got.get(trailerSession) != "x" || got.getInt(trailerFiles) != 3 {
		t.Errorf("round trip of %q = %+v", m.String(), got)
	}
	plain := parseMessage("subject\n\nNot: a trailer of ours\n")
	if plain.body != "Not: a trailer of ours" || len(plain.trailers) != 0 {
		t.Errorf("parse of a plain message = %+v", plain)
	}
	if got := cleanMessage("a\x00b\x1ec\n\td\n\n"); got != "abc\n\td" {
		t.Errorf("cleanMessage = %q", got)
	}
}

// TestRestoreKeepsWhatNoCheckpointHolds: a restore that would write over
// or remove a file that the checkpoint of the work tree taken first does
// not hold (an ignored file in a directory that becomes a file, an
// untracked file left out as too large, such a file where the checkpoint
// has a directory) is refused, and changes nothing; once they are moved
// away, it goes through.
func TestRestoreKeepsWhatNoCheckpointHolds(t *testing.T) {
	dir := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	const max = 1024
	write(t, dir, "x", "a file\n")
	write(t, dir, "data.bin", "small\n")
	write(t, dir, "big/inner.txt", "inner\n")
	write(t, dir, "src/main.go", "package main // v1\n")
	cp, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeRef, MaxFileSize: max})
	if err != nil {
		t.Fatal(err)
	}
	large := strings.Repeat("L", 2*max)
	cases := []struct {
		what, lost string
		make       func()
		undo       func()
	}{
		{"an ignored file in a directory that becomes a file", "x/keep.log",
			func() { os.Remove(filepath.Join(dir, "x")); write(t, dir, "x/keep.log", "precious\n") },
			func() { os.RemoveAll(filepath.Join(dir, "x")) }},
		{"an untracked file left out as too large", "data.bin",
			func() { write(t, dir, "data.bin", large) },
			func() { os.Remove(filepath.Join(dir, "data.bin")) }},
		{"a file left out where the checkpoint has a directory", "big",
			func() { os.RemoveAll(filepath.Join(dir, "big")); write(t, dir, "big", large) },
			func() { os.Remove(filepath.Join(dir, "big")) }},
	}
	for _, tc := range cases {
		tc.make()
		write(t, dir, "src/main.go", "package main // v2\n")
		_, _, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: cp.ID, MaxFileSize: max})
		var unsaved *UnsavedError
		if !errors.As(err, &unsaved) || !errors.Is(err, ErrUnsaved) || !slices.Equal(unsaved.Paths, []string{tc.lost}) {
			t.Errorf("%s: Restore = %v, want an UnsavedError naming %s", tc.what, err, tc.lost)
		}
		if got := read(t, dir, "src/main.go"); got != "package main // v2\n" {
			t.Errorf("%s: a refused restore changed src/main.go to %q", tc.what, got)
		}
		if !exists(dir, tc.lost) {
			t.Errorf("%s: %s is gone after a refused restore", tc.what, tc.lost)
		}
		tc.undo()
	}
	if _, _, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: cp.ID, MaxFileSize: max}); err != nil {
		t.Fatalf("Restore with nothing in the way: %v", err)
	}
	for name, want := range map[string]string{"x": "a file\n", "data.bin": "small\n", "big/inner.txt": "inner\n", "src/main.go": "package main // v1\n"} {
		if got := read(t, dir, name); got != want {
			t.Errorf("%s = %q after the restore, want %q", name, got, want)
		}
	}
}

// TestRestoreOfASubdirectory: a project below the repository's top is
// restored alone; the rest of the repository (another project) keeps its
// files, changed and new, and the project's directory stays even when the
// checkpoint has nothing in it.
func TestRestoreOfASubdirectory(t *testing.T) {
	repo := newRepo(t)
	c := newCheckpointer(t)
	ctx := ctxT(t)
	proj := filepath.Join(repo, "proj")
	write(t, repo, "proj/p", "p1\n")
	write(t, repo, "other/o", "o1\n")
	cp, err := c.Take(ctx, TakeRequest{Dir: proj, SessionID: "s", Mode: ModeRef})
	if err != nil {
		t.Fatal(err)
	}
	write(t, repo, "proj/p", "p2\n")
	write(t, repo, "proj/new", "new\n")
	write(t, repo, "other/o", "o2\n")
	write(t, repo, "other/work.txt", "work\n")
	write(t, repo, "top.txt", "top\n")
	if _, _, err := c.Restore(ctx, RestoreRequest{Dir: proj, Checkpoint: cp.ID}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"proj/p": "p1\n", "other/o": "o2\n", "other/work.txt": "work\n", "top.txt": "top\n"} {
		if !exists(repo, name) {
			t.Errorf("%s is gone after a restore of proj", name)
		} else if got := read(t, repo, name); got != want {
			t.Errorf("%s = %q after a restore of proj, want %q", name, got, want)
		}
	}
	if exists(repo, "proj/new") {
		t.Error("proj/new, which the checkpoint lacks, survived the restore of proj")
	}

	// A checkpoint with nothing in the project: its files go, it stays.
	os.RemoveAll(proj)
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	empty, err := c.Take(ctx, TakeRequest{Dir: proj, SessionID: "s", Mode: ModeRef})
	if err != nil {
		t.Fatal(err)
	}
	write(t, repo, "proj/p", "p3\n")
	if _, _, err := c.Restore(ctx, RestoreRequest{Dir: proj, Checkpoint: empty.ID}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(proj); err != nil || !fi.IsDir() || exists(repo, "proj/p") {
		t.Errorf("after a restore to a checkpoint with nothing in proj: %v, proj/p there: %v", err, exists(repo, "proj/p"))
	}
}
