package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// Issue "checkpoints": the schedule, on demand, the user's repository left
// alone, restore, non-git projects and bad input.

// ckptRepo is a real git repository in a project directory.
type ckptRepo struct {
	t   testing.TB
	dir string
}

// newCkptRepo makes a project directory with git init and an identity in
// the repository's config.
func newCkptRepo(t testing.TB) *ckptRepo {
	t.Helper()
	r := &ckptRepo{t: t, dir: project(t)}
	r.git("init", "-q", "-b", "main")
	r.git("config", "user.name", "E2E Test")
	r.git("config", "user.email", "e2e@example.com")
	r.git("config", "commit.gpgsign", "false")
	return r
}

// git runs git in the repository and returns its trimmed stdout; it fails
// the test if git fails.
func (r *ckptRepo) git(args ...string) string {
	r.t.Helper()
	res := execute(r.t, gitEnv(), "git", append([]string{"-C", r.dir}, args...)...)
	if res.code != 0 {
		r.t.Fatalf("git %s:\n%s", strings.Join(args, " "), res)
	}
	return strings.TrimSpace(res.stdout)
}

// gitEnv keeps the user's and the system's git config out of the tests.
func gitEnv() []string {
	return append(cleanEnv(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}

func (r *ckptRepo) write(rel, content string) {
	r.t.Helper()
	writeFile(r.t, filepath.Join(r.dir, filepath.FromSlash(rel)), content)
}

func (r *ckptRepo) read(rel string) string {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(rel)))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(data)
}

func (r *ckptRepo) commitAll(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
}

// userState is what a checkpoint must never change in the user's repository.
type userState struct {
	head, branch, stash, staged string
	index                       []byte
}

func (r *ckptRepo) userState() userState {
	r.t.Helper()
	idx, err := os.ReadFile(filepath.Join(r.dir, ".git", "index"))
	if err != nil {
		r.t.Fatal(err)
	}
	return userState{
		head:   r.git("rev-parse", "HEAD"),
		branch: r.git("symbolic-ref", "HEAD"),
		stash:  r.git("stash", "list"),
		staged: r.git("diff", "--cached"),
		index:  idx,
	}
}

func (r *ckptRepo) assertUntouched(what string, before userState) {
	r.t.Helper()
	after := r.userState()
	for _, c := range []struct{ name, before, after string }{
		{"HEAD", before.head, after.head},
		{"branch (symbolic-ref HEAD)", before.branch, after.branch},
		{"stash list", before.stash, after.stash},
		{"staged change (diff --cached)", before.staged, after.staged},
	} {
		if c.before != c.after {
			r.t.Errorf("%s changed the user's %s:\nbefore: %s\nafter:  %s", what, c.name, c.before, c.after)
		}
	}
	if !bytes.Equal(before.index, after.index) {
		r.t.Errorf("%s changed the bytes of .git/index (%d bytes before, %d after)", what, len(before.index), len(after.index))
	}
	if fileExists(filepath.Join(r.dir, ".git", "index.lock")) {
		r.t.Errorf("%s left .git/index.lock behind", what)
	}
}

// treeFiles lists the paths of a commit's tree.
func (r *ckptRepo) treeFiles(commit string) []string {
	r.t.Helper()
	out := r.git("ls-tree", "-r", "--name-only", commit)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// readProjectFile reads a file of the project's .sessiond.
func readProjectFile(t testing.TB, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".sessiond", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkpointLine is what sessionctl checkpoint prints for a new checkpoint.
var checkpointLine = regexp.MustCompile(`^checkpoint ([0-9a-f]{12}) on (refs/sessiond/checkpoints/[a-z0-9_-]+): (\d+) files? changed\n`)

// takeCheckpoint runs sessionctl checkpoint and returns the full id of the
// new checkpoint.
func takeCheckpoint(t testing.TB, d *daemon, r *ckptRepo, id string) string {
	t.Helper()
	out := d.mustCtl("checkpoint", id)
	m := checkpointLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("sessionctl checkpoint %s: got %q, want %q", id, out, checkpointLine)
	}
	if m[2] != "refs/sessiond/checkpoints/"+id {
		t.Errorf("checkpoint ref: got %s, want refs/sessiond/checkpoints/%s", m[2], id)
	}
	return r.git("rev-parse", "--verify", m[1]+"^{commit}")
}

// listCheckpoints returns sessionctl checkpoints DIR --json, each entry as
// raw fields.
func listCheckpoints(t testing.TB, d *daemon, dir string) []map[string]json.RawMessage {
	t.Helper()
	out := d.mustCtl("--json", "checkpoints", dir)
	var list []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("checkpoints --json: %v\n%s", err, out)
	}
	return list
}

func jsonString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func TestCheckpointSchedule(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	repo := newCkptRepo(t)
	repo.write("main.go", "package main\n")
	repo.commitAll("initial")
	id := d.start(repo.dir, "--checkpoint", "@every 1s", "--stop-grace", "1s", "--", "sleep", "1000")

	repo.write("main.go", "package main\n\nfunc main() {}\n")
	repo.write("pkg/new.go", "package pkg\n")
	var rec record
	waitFor(t, 6*time.Second, "a scheduled checkpoint after a change", func() (bool, string) {
		rec = d.inspect(id)
		return rec.Checkpoints >= 1 && rec.LastCheckpoint != "", fmt.Sprintf("checkpoints %d, last_checkpoint %q", rec.Checkpoints, rec.LastCheckpoint)
	})
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(rec.LastCheckpoint) {
		t.Errorf("last_checkpoint %q: want a commit id", rec.LastCheckpoint)
	}
	// Let the watcher and the scheduler settle on that change: the count
	// may still move once within a tick.
	var n int
	waitFor(t, 6*time.Second, "the checkpoint to hold both changed files", func() (bool, string) {
		rec = d.inspect(id)
		n = rec.Checkpoints
		files := repo.treeFiles(rec.LastCheckpoint)
		return slices.Contains(files, "pkg/new.go"), strings.Join(files, " ")
	})
	// No change: no new checkpoint over 2.5 schedule ticks.
	quiet := time.Now()
	sleepUntil(quiet.Add(2500 * time.Millisecond))
	if got := d.inspect(id); got.Checkpoints != n || got.LastCheckpoint != rec.LastCheckpoint {
		t.Errorf("without a change for 2.5s with @every 1s: checkpoints %d -> %d (last %s -> %s), want no new one",
			n, got.Checkpoints, rec.LastCheckpoint, got.LastCheckpoint)
	}

	// The table.
	table := d.mustCtl("checkpoints", repo.dir)
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	header := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(lines[0]), -1)
	if want := []string{"ID", "TIME", "SESSION", "FILES", "MESSAGE"}; !slices.Equal(header, want) {
		t.Errorf("checkpoints header: got %q, want %q", header, want)
	}
	if len(lines) != n+1 || !strings.HasPrefix(lines[1], rec.LastCheckpoint[:12]+" ") || !strings.Contains(lines[1], id) {
		t.Errorf("checkpoints: want %d rows, newest first %s of session %s; got\n%s", n, rec.LastCheckpoint[:12], id, table)
	}

	// --json: exactly the documented fields.
	list := listCheckpoints(t, d, repo.dir)
	if len(list) != n {
		t.Fatalf("checkpoints --json: got %d entries, want %d", len(list), n)
	}
	// DESIGN's fields, and the summary (turn and files) with the first
	// files changed; turn, former_ids and folded appear when they apply.
	wantFields := []string{"files", "files_changed", "id", "message", "ref", "session_id", "summary", "time"}
	for _, cp := range list {
		var keys []string
		for k := range cp {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !slices.Equal(keys, wantFields) {
			t.Errorf("checkpoints --json entry fields: got %q, want %q", keys, wantFields)
		}
	}
	ref := "refs/sessiond/checkpoints/" + id
	if got := jsonString(list[0]["id"]); got != rec.LastCheckpoint {
		t.Errorf("checkpoints --json newest id %s, want the record's last_checkpoint %s", got, rec.LastCheckpoint)
	}
	if jsonString(list[0]["session_id"]) != id || jsonString(list[0]["ref"]) != ref {
		t.Errorf("checkpoints --json newest: session_id %s ref %s; want %s %s", list[0]["session_id"], list[0]["ref"], id, ref)
	}
	var tm time.Time
	if err := json.Unmarshal(list[0]["time"], &tm); err != nil || time.Since(tm) > time.Minute || time.Until(tm) > time.Second {
		t.Errorf("checkpoints --json time %s: want about now (%v)", list[0]["time"], err)
	}

	// The ref exists in the user's repository and points at the newest.
	if got := repo.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/sessiond/"); got != ref+" "+rec.LastCheckpoint {
		t.Errorf("git for-each-ref refs/sessiond/: got %q, want %q", got, ref+" "+rec.LastCheckpoint)
	}
	d.mustCtl("stop", id)
}

func TestCheckpointLeavesUserRepoUntouched(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	repo := newCkptRepo(t)
	repo.write(".gitignore", "ignored/\n*.log\n")
	repo.write("a.txt", "a1\n")
	repo.write("b.txt", "b1\n")
	repo.commitAll("initial")
	repo.git("checkout", "-q", "-b", "feature")
	repo.write("a.txt", "stashed change\n")
	repo.git("stash", "-q")
	repo.write("b.txt", "staged change\n")
	repo.git("add", "b.txt")
	before := repo.userState()
	if before.stash == "" || before.staged == "" || before.branch != "refs/heads/feature" {
		t.Fatalf("set-up: stash %q, staged %q, branch %q", before.stash, before.staged, before.branch)
	}

	id := d.start(repo.dir, "--stop-grace", "1s", "--", "sleep", "1000")
	var ids []string
	for i, name := range []string{"u1.txt", "dir/u2.txt", "dir/deeper/u3.txt"} {
		repo.write(name, "untracked "+name+"\n")
		repo.write("ignored/cache"+string(rune('0'+i)), "ignored\n")
		repo.write("debug.log", strings.Repeat("log\n", i+1))
		ids = append(ids, takeCheckpoint(t, d, repo, id))
		repo.assertUntouched("checkpoint "+ids[i][:12], before)
	}
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("three checkpoints of three different trees: ids %q, want all different", ids)
	}
	// Chained: the first on HEAD, each next on the one before.
	if got := repo.git("rev-parse", ids[0]+"^"); got != before.head {
		t.Errorf("parent of the first checkpoint: %s, want HEAD %s", got, before.head)
	}
	for i := 1; i < len(ids); i++ {
		if got := repo.git("rev-parse", ids[i]+"^"); got != ids[i-1] {
			t.Errorf("parent of checkpoint %d: %s, want %s", i+1, got, ids[i-1])
		}
	}
	last := ids[len(ids)-1]
	files := repo.treeFiles(last)
	for _, want := range []string{".gitignore", "a.txt", "b.txt", "u1.txt", "dir/u2.txt", "dir/deeper/u3.txt"} {
		if !slices.Contains(files, want) {
			t.Errorf("checkpoint %s lacks %s; has %q", last[:12], want, files)
		}
	}
	for _, f := range files {
		if strings.HasPrefix(f, "ignored/") || strings.HasSuffix(f, ".log") || strings.HasPrefix(f, ".sessiond") {
			t.Errorf("checkpoint %s holds %s, which is ignored", last[:12], f)
		}
	}
	// The work tree as it is, not as staged or stashed: b.txt has the
	// staged content because it is also the work tree's.
	if got := repo.git("show", last+":dir/deeper/u3.txt"); got != "untracked dir/deeper/u3.txt" {
		t.Errorf("u3.txt in the checkpoint: %q", got)
	}
	if got := repo.git("show", last+":a.txt"); got != "a1" {
		t.Errorf("a.txt in the checkpoint: %q, want the work tree's a1 (not the stash)", got)
	}
	if got := repo.git("rev-parse", "refs/sessiond/checkpoints/"+id); got != last {
		t.Errorf("checkpoint ref: %s, want %s", got, last)
	}
	// The branch and the user's refs: only sessiond's ref was added.
	refs := repo.git("for-each-ref", "--format=%(refname)")
	if want := "refs/heads/feature\nrefs/heads/main\nrefs/sessiond/checkpoints/" + id + "\nrefs/stash"; refs != want {
		t.Errorf("refs after checkpoints:\n%s\nwant:\n%s", refs, want)
	}
	if got := repo.read("b.txt"); got != "staged change\n" {
		t.Errorf("b.txt in the work tree: %q", got)
	}
	d.mustCtl("stop", id)
	repo.assertUntouched("the session's end", before)
}

// workTree reads every file of dir except .git, .sessiond and the paths
// skip names.
func workTree(t testing.TB, dir string, skip ...string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if rel == ".git" || rel == ".sessiond" {
				return filepath.SkipDir
			}
			return nil
		}
		if slices.Contains(skip, rel) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// commitTree reads every file of a commit.
func (r *ckptRepo) commitTree(commit string) map[string]string {
	r.t.Helper()
	files := map[string]string{}
	for _, f := range r.treeFiles(commit) {
		res := execute(r.t, gitEnv(), "git", "-C", r.dir, "show", commit+":"+f)
		if res.code != 0 {
			r.t.Fatalf("git show %s:%s\n%s", commit, f, res)
		}
		files[f] = res.stdout
	}
	return files
}

// TestRestoreOfAProjectInARepository: a project below a repository's top
// is restored alone, and not while a session runs in a directory that
// holds it; an ignored file that a restore would replace is kept, and the
// restore refused, naming it.
func TestRestoreOfAProjectInARepository(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	repo := newCkptRepo(t)
	repo.write(".gitignore", "*.secret\n")
	repo.write("proj/p", "p1\n")
	repo.write("other/o", "o1\n")
	repo.commitAll("initial")
	proj := filepath.Join(repo.dir, "proj")

	id := d.start("--checkpoint", "", proj, "--", "sleep", "1000")
	repo.write("proj/p", "p2\n")
	repo.write("proj/x", "a file\n")
	cp := takeCheckpoint(t, d, repo, id)
	d.mustCtl("stop", id)

	outer := d.start("--checkpoint", "", repo.dir, "--", "sleep", "1000")
	if r := d.ctl("restore", proj, cp[:12]); r.code != 1 || !strings.Contains(r.stderr, outer) || !strings.Contains(r.stderr, "--force") {
		t.Errorf("restore of %s while session %s runs in the repository's top: want exit 1 naming it and --force\n%s", proj, outer, r)
	}
	d.mustCtl("stop", outer)
	other := d.start("--checkpoint", "", filepath.Join(repo.dir, "other"), "--", "sleep", "1000")

	repo.write("proj/p", "p3\n")
	repo.write("other/o", "o2\n")
	repo.write("other/work.txt", "work\n")
	if err := os.Remove(filepath.Join(proj, "x")); err != nil {
		t.Fatal(err)
	}
	repo.write("proj/x/keys.secret", "precious\n")
	if r := d.ctl("restore", proj, cp[:12]); r.code != 1 || !strings.Contains(r.stderr, "x/keys.secret") || !strings.Contains(r.stderr, "nothing restored") {
		t.Errorf("a restore that would replace an ignored file: want exit 1 naming it\n%s", r)
	}
	if got := repo.read("proj/x/keys.secret"); got != "precious\n" {
		t.Errorf("the ignored proj/x/keys.secret = %q after a refused restore", got)
	}
	if got := repo.read("proj/p"); got != "p3\n" {
		t.Errorf("a refused restore changed proj/p to %q", got)
	}
	if err := os.RemoveAll(filepath.Join(proj, "x")); err != nil {
		t.Fatal(err)
	}

	d.mustCtl("restore", proj, cp[:12])
	for name, want := range map[string]string{"proj/p": "p2\n", "proj/x": "a file\n", "other/o": "o2\n", "other/work.txt": "work\n"} {
		if got := repo.read(name); got != want {
			t.Errorf("%s = %q after the restore of proj, want %q", name, got, want)
		}
	}
	d.mustCtl("stop", other)
}

func TestCheckpointRestore(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	repo := newCkptRepo(t)
	repo.write(".gitignore", "*.log\n")
	repo.write("keep.txt", "keep\n")
	repo.write("mod.txt", "original\n")
	repo.write("del.txt", "to be deleted\n")
	repo.write("src/lib.go", "package src\n")
	repo.commitAll("initial")
	repo.write("notes.log", "ignored before\n")

	id := d.start(repo.dir, "--stop-grace", "1s", "--", "sleep", "1000")
	repo.write("new.txt", "new in the session\n")
	repo.write("mod.txt", "changed in the session\n")
	cp := takeCheckpoint(t, d, repo, id)
	want := repo.commitTree(cp)

	r := d.ctl("restore", repo.dir, cp[:12])
	if r.code != 1 || !strings.Contains(r.stderr, "--force") || !strings.Contains(r.stderr, id) {
		t.Errorf("restore while session %s runs: want exit 1 naming it and --force\n%s", id, r)
	}
	if got := repo.read("new.txt"); got != "new in the session\n" {
		t.Errorf("a refused restore changed new.txt: %q", got)
	}
	d.mustCtl("stop", id)

	// Work after the checkpoint: modify, add, delete, touch an ignored file.
	repo.write("mod.txt", "changed after the checkpoint\n")
	repo.write("added.txt", "added after the checkpoint\n")
	repo.write("src/extra/deep.go", "package extra\n")
	if err := os.Remove(filepath.Join(repo.dir, "del.txt")); err != nil {
		t.Fatal(err)
	}
	repo.write("notes.log", "ignored after\n")
	before := repo.userState()
	preRestore := workTree(t, repo.dir, "notes.log")

	out := d.mustCtl("restore", repo.dir, cp[:12])
	m := regexp.MustCompile(`saved the current tree as checkpoint ([0-9a-f]{12})\nrestored (.+) to checkpoint ([0-9a-f]{12})\n`).FindStringSubmatch(out)
	if m == nil || m[2] != repo.dir || m[3] != cp[:12] {
		t.Fatalf("restore output: got %q, want the saved checkpoint and %s restored to %s", out, repo.dir, cp[:12])
	}
	if got := workTree(t, repo.dir, "notes.log"); !mapsEqual(got, want) {
		t.Errorf("work tree after restore:\n%q\nwant the checkpoint's:\n%q", got, want)
	}
	if fileExists(filepath.Join(repo.dir, "src", "extra")) {
		t.Errorf("restore left the directory src/extra, which only held a file the checkpoint lacks")
	}
	if got := repo.read("notes.log"); got != "ignored after\n" {
		t.Errorf("restore changed the ignored notes.log: %q", got)
	}
	repo.assertUntouched("restore", before)

	// The saved checkpoint holds the tree as it was before the restore,
	// and the listing says which restore it was saved for.
	if out := d.mustCtl("checkpoints", repo.dir); !regexp.MustCompile(`(?m)^` + m[1] + ` .* restore +\d+ +before restoring ` + cp[:12] + `$`).MatchString(out) {
		t.Errorf("checkpoints does not name the restore the saved checkpoint was for:\n%s", out)
	}
	saved := repo.git("rev-parse", "--verify", m[1]+"^{commit}")
	if got := repo.commitTree(saved); !mapsEqual(got, preRestore) {
		t.Errorf("saved checkpoint %s:\n%q\nwant the pre-restore tree:\n%q", m[1], got, preRestore)
	}
	var found bool
	for _, c := range listCheckpoints(t, d, repo.dir) {
		if jsonString(c["id"]) == saved {
			found = true
			if !strings.HasPrefix(jsonString(c["ref"]), "refs/sessiond/checkpoints/") {
				t.Errorf("saved checkpoint's ref: %s", c["ref"])
			}
		}
	}
	if !found {
		t.Errorf("the saved checkpoint %s is not in checkpoints --json", saved)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestCheckpointNonGitProject(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	id := d.start(dir, "--checkpoint", "@every 1s", "--stop-grace", "1s", "--", "sleep", "1000")
	writeFile(t, filepath.Join(dir, "b.txt"), "b\n")
	waitFor(t, 6*time.Second, "a checkpoint of the non-git project", func() (bool, string) {
		rec := d.inspect(id)
		return rec.Checkpoints >= 1 && rec.LastCheckpoint != "", rec.LastCheckpoint
	})
	list := listCheckpoints(t, d, dir)
	if len(list) < 1 || jsonString(list[0]["session_id"]) != id {
		t.Errorf("checkpoints --json of the non-git project: want one of %s, got %v", id, list)
	}
	d.mustCtl("stop", id)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{".sessiond", "a.txt", "b.txt"}; !slices.Equal(names, want) {
		t.Errorf("non-git project after checkpoints: holds %q, want %q (no .git or anything else of sessiond's)", names, want)
	}
}

func TestCheckpointBadInput(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)

	t.Run("garbage index", func(t *testing.T) {
		t.Parallel()
		d := d.with(t)
		repo := newCkptRepo(t)
		repo.write("a.txt", "a\n")
		repo.commitAll("initial")
		garbage := make([]byte, 512)
		if _, err := rand.Read(garbage); err != nil {
			t.Fatal(err)
		}
		index := filepath.Join(repo.dir, ".git", "index")
		if err := os.WriteFile(index, garbage, 0o644); err != nil {
			t.Fatal(err)
		}
		events := followEvents(t, d)
		id := d.start(repo.dir, "--stop-grace", "1s", "--", "sleep", "1000")
		repo.write("b.txt", "b\n")
		r := d.ctl("checkpoint", id)
		if r.code != 1 || !strings.Contains(r.stderr, "checkpoint") || !strings.Contains(r.stderr, "index") {
			t.Errorf("checkpoint with a garbage index: want exit 1 and a message about the index\n%s", r)
		}
		var raw struct {
			State    string   `json:"state"`
			PID      int      `json:"pid"`
			Warnings []string `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(d.mustCtl("inspect", id)), &raw); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(raw.Warnings, func(w string) bool { return strings.Contains(w, "checkpoint failed") }) {
			t.Errorf("record warnings %q: want one about the failed checkpoint", raw.Warnings)
		}
		ev := events.waitEvent("a checkpoint event", 10*time.Second, func(ev streamEvent) bool {
			return ev.Type == "checkpoint" && ev.SessionID == id
		})
		if !strings.Contains(ev.Message, "failed") {
			t.Errorf("checkpoint event: %q, want it to say failed", ev.Message)
		}
		if got, _ := os.ReadFile(index); !bytes.Equal(got, garbage) {
			t.Errorf("the failed checkpoint changed .git/index")
		}
		if raw.State != "running" || !alive(raw.PID) {
			t.Errorf("after the failed checkpoint: state %s, pid %d alive %v; want running", raw.State, raw.PID, alive(raw.PID))
		}
		if fileExists(index + ".lock") {
			t.Errorf("the failed checkpoint left .git/index.lock")
		}
		d.mustCtl("stop", id)
		var h struct {
			Warnings []string `json:"warnings"`
		}
		if err := json.Unmarshal(readProjectFile(t, repo.dir, "handoff.json"), &h); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(h.Warnings, func(w string) bool { return strings.Contains(w, "checkpoint failed") }) {
			t.Errorf("handoff warnings %q: want one about the failed checkpoint", h.Warnings)
		}
		if got, _ := os.ReadFile(index); !bytes.Equal(got, garbage) {
			t.Errorf("the session's end changed .git/index")
		}
	})

	t.Run("checkpoints of a missing directory", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(project(t), "nope")
		r := d.with(t).ctl("checkpoints", missing)
		if r.code != 1 || !strings.Contains(r.stderr, missing) || !strings.Contains(r.stderr, "does not exist") {
			t.Errorf("checkpoints of %s: want exit 1 saying it does not exist\n%s", missing, r)
		}
	})

	t.Run("restore an unknown checkpoint", func(t *testing.T) {
		t.Parallel()
		d := d.with(t)
		repo := newCkptRepo(t)
		repo.write("a.txt", "a\n")
		repo.commitAll("initial")
		id := d.start(repo.dir, "--", "sleep", "1000")
		repo.write("b.txt", "b\n")
		takeCheckpoint(t, d, repo, id)
		d.mustCtl("stop", id)
		for _, bad := range []string{"deadbeef", "zz"} {
			r := d.ctl("restore", repo.dir, bad)
			if r.code != 1 || !strings.Contains(r.stderr, bad) || !strings.Contains(r.stderr, "unknown checkpoint") {
				t.Errorf("restore %s: want exit 1 naming it as an unknown checkpoint\n%s", bad, r)
			}
		}
		// Through the API: not found.
		resp, body := curl(t, d.sock, "POST", "/v1/projects/"+ipcProjectID(repo.dir)+"/restore",
			[]byte(`{"checkpoint":"deadbeef","dir":"`+repo.dir+`"}`))
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"code":"not_found"`) {
			t.Errorf("POST restore of an unknown checkpoint: %d %s, want 404 not_found", resp.StatusCode, body)
		}
		if got := repo.read("b.txt"); got != "b\n" {
			t.Errorf("a failed restore changed b.txt: %q", got)
		}
	})

	t.Run("bad schedule", func(t *testing.T) {
		t.Parallel()
		d := d.with(t)
		dir := project(t)
		r := d.ctl("start", dir, "--checkpoint", "not a cron", "--", "sleep", "1000")
		if r.code == 0 || !strings.Contains(r.stderr, "not a cron") || !strings.Contains(r.stderr, "schedule") {
			t.Errorf("--checkpoint 'not a cron': want a non-zero exit naming the bad schedule\n%s", r)
		}
		for _, rec := range d.list(true) {
			if rec.ProjectDir == dir {
				t.Errorf("a session was recorded for the bad schedule: %s %s", rec.ID, rec.State)
			}
		}
	})
}

// TestCheckpointIDsSurvivePrune: the ids a handoff, the session state and
// the progress log cite still resolve after a prune rewrote and folded
// the history: the list shows the old id beside the new one, a lookup by
// the old id finds its checkpoint, and a restore by it works.
func TestCheckpointIDsSurvivePrune(t *testing.T) {
	d := startDaemon(t)
	r := newCkptRepo(t)
	r.write("a.txt", "one\n")
	r.commitAll("first")
	id := d.start("--checkpoint", "", r.dir, "--", "sleep", "300")
	var ids []string
	for i, text := range []string{"two\n", "three\n", "four\n"} {
		r.write("a.txt", text)
		r.write(fmt.Sprintf("n%d.txt", i), text)
		ids = append(ids, takeCheckpoint(t, d, r, id))
	}
	d.mustCtl("stop", id)
	d.waitEnded(id, 15*time.Second)
	var h struct {
		Checkpoint string `json:"checkpoint"`
	}
	if err := json.Unmarshal(readProjectFile(t, r.dir, "handoff.json"), &h); err != nil {
		t.Fatal(err)
	}
	progress := string(readProjectFile(t, r.dir, "progress.md"))
	cited := h.Checkpoint
	if cited == "" || !slices.Contains(ids, cited) {
		t.Fatalf("handoff cites checkpoint %q, want one of %v", cited, ids)
	}

	// Keep one: the newest is rewritten (its parents fold away), the two
	// before it are folded into it.
	out := d.mustCtl("checkpoints", "--prune", "1", r.dir)
	list := listCheckpoints(t, d, r.dir)
	if len(list) != 1 {
		t.Fatalf("after --prune 1: %d checkpoints\n%s", len(list), out)
	}
	kept := jsonString(list[0]["id"])
	if kept != cited && !strings.Contains(out, "was "+cited[:12]) {
		t.Errorf("the list does not show the cited id %.12s beside the new %.12s:\n%s", cited, kept, out)
	}
	for _, old := range append([]string{cited}, ids...) {
		found := d.mustCtl("--json", "checkpoints", r.dir, old)
		var f []struct {
			ID        string `json:"id"`
			Match     string `json:"match"`
			MatchedID string `json:"matched_id"`
		}
		if err := json.Unmarshal([]byte(found), &f); err != nil || len(f) != 1 || f[0].ID != kept || f[0].MatchedID != old {
			t.Errorf("lookup of %.12s after the prune: %s (%v), want checkpoint %.12s", old, found, err, kept)
		}
	}
	if strings.Contains(progress, "checkpoint") {
		for _, old := range ids {
			if strings.Contains(progress, old[:12]) {
				if r := d.ctl("checkpoints", r.dir, old[:12]); r.code != 0 {
					t.Errorf("the progress log cites %.12s, which no longer resolves: %s", old, r)
				}
			}
		}
	}
	// A restore by the id the handoff cites.
	r.write("a.txt", "changed after\n")
	d.mustCtl("restore", r.dir, cited)
	if got := r.read("a.txt"); got != "four\n" {
		t.Errorf("restore by the cited id: a.txt = %q, want the checkpoint's", got)
	}
}

// TestCheckpointFullEvery: checkpoints through the daemon read only what the
// watcher saw change, and checkpoint_full_every in the daemon config makes
// every so many of them a full scan of the work tree.
func TestCheckpointFullEvery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config string
		// full is which of the six checkpoints scan the whole tree.
		full []bool
	}{
		{"default", "", []bool{true, false, false, false, false, false}},
		{"every 2", "checkpoint_full_every = 2\n", []bool{true, false, false, true, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			d := startDaemonWith(t, state, filepath.Join(state, "s.sock"), tc.config)
			r := newCkptRepo(t)
			r.write("a.txt", "zero\n")
			r.commitAll("first")
			id := d.start("--checkpoint", "", r.dir, "--", "sleep", "300")
			var got []bool
			for i := range tc.full {
				r.write("a.txt", fmt.Sprintf("edit %d\n", i))
				var res struct {
					Skipped     bool   `json:"skipped"`
					Incremental bool   `json:"incremental"`
					FullReason  string `json:"full_reason"`
				}
				out := d.mustCtl("--json", "checkpoint", id)
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatalf("checkpoint --json: %v\n%s", err, out)
				}
				if res.Skipped {
					t.Fatalf("checkpoint %d: skipped, but a.txt changed", i)
				}
				if !res.Incremental && res.FullReason == "" {
					t.Errorf("checkpoint %d: a full scan with no reason given", i)
				}
				got = append(got, !res.Incremental)
			}
			if !slices.Equal(got, tc.full) {
				t.Errorf("full scans: got %v, want %v", got, tc.full)
			}
			d.mustCtl("stop", id)
			d.waitEnded(id, 15*time.Second)
		})
	}
}
